// The one parser of the test-only mutations (test_mutation.hpp). Compiled only
// with the build option SLUICE_TEST_MUTATIONS.
#include "test_mutation.hpp"

#include "checks.hpp"
#include "settings.hpp"

#include <cstdio>
#include <cstring>
#include <exception>
#include <string>

namespace sluice::detail::mutation {

std::atomic<int> chosen{-1};

namespace {

constexpr struct {
  const char* name;
  kind k;
} names[] = {
    {"host.ignore_event_waits", kind::ignore_event_waits},
    {"host.complete_records_at_once", kind::complete_records_at_once},
    {"host.run_host_functions_early", kind::run_host_functions_early},
    {"host.lose_host_function_exceptions", kind::lose_host_function_exceptions},
    {"host.invert_priorities", kind::invert_priorities},
    {"host.borrow_own_queue", kind::borrow_own_queue},
    {"host.borrow_destroys_native", kind::borrow_destroys_native},
    {"host.borrow_accepts_any", kind::borrow_accepts_any},
    {"host.strided_ignores_pitch", kind::strided_ignores_pitch},
    {"host.registered_counts_pageable", kind::registered_counts_pageable},
    {"host.strided_peer_drops_last_row", kind::strided_peer_drops_last_row},
    {"host.graph_launches_overlap", kind::graph_launches_overlap},
    {"host.graph_ignores_dependencies", kind::graph_ignores_dependencies},
    {"host.graph_events_not_recorded", kind::graph_events_not_recorded},
    {"host.graph_replays_once", kind::graph_replays_once},
    {"host.graph_launch_returns_early", kind::graph_launch_returns_early},
    {"host.graph_update_ignored", kind::graph_update_ignored},
    {"host.graph_discard_runs", kind::graph_discard_runs},
    {"host.graph_edges_unreduced", kind::graph_edges_unreduced},
    {"host.graph_other_threads_run", kind::graph_other_threads_run},
    {"host.graph_first_capture_fails", kind::graph_first_capture_fails},
    {"comm.post_at_enqueue", kind::post_at_enqueue},
    {"comm.enqueue_waits", kind::enqueue_waits},
    {"comm.one_at_a_time", kind::one_at_a_time},
    {"comm.tag_zero", kind::tag_zero},
    {"comm.collectives_unordered", kind::collectives_unordered},
    {"comm.skip_rank_checks", kind::skip_rank_checks},
    {"comm.no_timeout", kind::no_timeout},
    {"comm.receive_unprobed", kind::receive_unprobed},
    {"comm.piece_header_unchecked", kind::piece_header_unchecked},
    {"comm.chain_unchecked", kind::chain_unchecked},
    {"comm.early_deadline", kind::early_deadline},
    {"comm.forget_lost_peers", kind::forget_lost_peers},
    {"comm.receive_unwritten", kind::receive_unwritten},
    {"comm.untraced", kind::untraced},
    {"kokkos.unordered", kind::unordered},
    {"kokkos.waits", kind::waits},
    {"kokkos.global_fence", kind::global_fence},
    {"kokkos.lose_exceptions", kind::lose_exceptions},
};

// What SLUICE_TEST_MUTATION says, read once: the mutation, or why the name is none.
struct reading {
  kind k = kind::none;
  std::exception_ptr failure;
};

const reading& read_once() noexcept {
  static const reading r = [] {
    reading result;
    try {
      const std::string value = settings::test_mutation();
      result.k = parse(value.c_str());
      if (result.k != kind::none)
        std::fprintf(stderr, "sluice: SLUICE_TEST_MUTATION=%s: a guarantee is broken on purpose\n",
                     value.c_str());
    } catch (...) {
      result.failure = std::current_exception();
    }
    chosen.store(static_cast<int>(result.k), std::memory_order_relaxed);
    return result;
  }();
  return r;
}

}  // namespace

kind parse(const char* value) {
  if (value == nullptr || *value == '\0') return kind::none;
  for (const auto& n : names)
    if (std::strcmp(value, n.name) == 0) return n.k;
  std::string known;
  for (const auto& n : names) known += std::string(known.empty() ? "" : ", ") + n.name;
  fail(errc::invalid_argument, "sluice", "SLUICE_TEST_MUTATION='", value,
       "' names no mutation (test-only: ", known, ")");
}

int read_chosen() noexcept { return static_cast<int>(read_once().k); }

void configure() {
  if (const reading& r = read_once(); r.failure) std::rethrow_exception(r.failure);
}

kind active() {
  configure();
  return read_once().k;
}

}  // namespace sluice::detail::mutation
