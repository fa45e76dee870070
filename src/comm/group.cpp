// A group of sluice::comm: its sends and receives collected while it lives
// (operations.cpp adds them), then enqueued together as one batch.
#include "comm/group.hpp"

#include "comm/checks.hpp"
#include "comm/enqueue.hpp"

#include <sluice/comm.hpp>
#include <sluice/detail/interop.hpp>
#include <sluice/error.hpp>

#include <cstdio>
#include <exception>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace sluice::comm {

namespace detail {

namespace {

// The group that lives on this thread, if any (one per communicator: they do
// not nest, and a thread has few).
thread_local std::vector<group_state*> live_groups;

}  // namespace

group_state* live_group(const communicator_state& c) {
  for (group_state* g : live_groups)
    if (g->comm.get() == &c) return g;
  return nullptr;
}

}  // namespace detail

group::group(const communicator& c) {
  constexpr const char* api = "sluice::comm::group";
  const auto& state = detail::communicator_state::of(c);
  auto& cs = detail::checked(state, api);
  if (detail::live_group(cs) != nullptr)
    detail::reject(errc::invalid_argument, api,
                   "a group of this communicator already lives on this thread");
  auto g = std::make_unique<detail::group_state>();
  g->comm = state;
  g->b.reset(detail::new_batch());
  g->b->comm = state;
  g->b->grouped = true;
  detail::live_groups.push_back(g.get());
  state_ = std::move(g);
}

group::~group() {
  auto& live = detail::live_groups;
  for (auto it = live.begin(); it != live.end(); ++it)
    if (*it == state_.get()) {
      live.erase(it);
      break;
    }
  if (state_->b->messages.empty()) return;
  auto& c = *state_->comm;
  try {
    std::lock_guard<std::mutex> lock(c.m);  // beside the ungrouped enqueues
    detail::enqueue(std::move(state_->b));
  } catch (const std::exception& e) {
    // Nothing is lost: the group's streams and stderr say it.
    const std::string message = "sluice::comm: rank " + std::to_string(c.rank) +
                                ": a group could not be enqueued: " + e.what();
    std::fprintf(stderr, "sluice: %s\n", message.c_str());
    if (state_->b)
      for (stream_ref s : state_->b->streams) {
        try {
          sluice::detail::report_stream_failure(s, errc::comm_failure, message);
        } catch (...) {
        }
      }
  }
}

}  // namespace sluice::comm
