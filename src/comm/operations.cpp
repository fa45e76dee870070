// sluice::comm's operations: every argument checked before anything is
// enqueued (COMM-6), sends and receives given their match numbers in enqueue
// order (COMM-4), and each operation handed to enqueue.cpp as a batch (or
// added to the live group).
#include "comm/checks.hpp"
#include "comm/enqueue.hpp"
#include "comm/group.hpp"
#include "comm/impl/batch.hpp"
#include "comm/impl/communicator_state.hpp"
#include "comm/mutation.hpp"

#include <sluice/comm.hpp>
#include <sluice/error.hpp>

#include <cstdint>
#include <memory>
#include <mutex>

namespace sluice::comm {

namespace detail {

namespace {

batch_ptr single(const std::shared_ptr<communicator_state>& c, stream_ref s, const message& m) {
  batch_ptr b(new_batch());
  b->comm = c;
  b->messages.push_back(m);
  b->streams.push_back(s);
  return b;
}

void point_to_point(stream_ref s, message m, const std::shared_ptr<communicator_state>& state,
                    const char* api) {
  auto& c = checked(state, api);
  check_stream(s, c, api);
  check_rank(m.peer, c, m.kind == op_kind::send ? "destination" : "source", api);
  checked_count(m.count, 1, api);
  check_buffer(m.kind == op_kind::send ? m.in : m.out, m.count,
               m.kind == op_kind::send ? "send" : "receive", api);
  if (m.kind == op_kind::send)
    m.in_device = check_memory(m.in, c, "send", api);
  else
    m.out_device = check_memory(m.out, c, "receive", api);
  group_state* g = live_group(c);
  // The match number: the n-th send from a to b meets b's n-th receive from a.
  {
    std::lock_guard<std::mutex> lock(c.m);
    check_not_lost(c, m, api);  // a peer lost after a failure: refused, nothing enqueued
    auto& counter = m.kind == op_kind::send ? c.sent[static_cast<std::size_t>(m.peer)]
                                            : c.received[static_cast<std::size_t>(m.peer)];
    m.tag = mutation::is(mutation::kind::tag_zero)
                ? 0
                : static_cast<int>(counter % (static_cast<std::uint64_t>(c.tag_limit) + 1));
    m.sequence = mutation::is(mutation::kind::tag_zero) ? 0 : counter;
    if (g == nullptr) {
      enqueue(single(state, s, m));  // under c.m: match numbers and enqueue order agree
    } else {
      std::size_t index = g->b->streams.size();
      for (std::size_t k = 0; k < g->b->streams.size(); ++k)
        if (g->b->streams[k] == s) index = k;
      if (index == g->b->streams.size()) g->b->streams.push_back(s);
      m.stream = index;
      g->b->messages.push_back(m);
    }
    ++counter;
  }
}

void collective(stream_ref s, message m, const std::shared_ptr<communicator_state>& state,
                const char* api) {
  auto& c = checked(state, api);
  check_stream(s, c, api);
  m.in_device = check_memory(m.in, c, "input", api);
  m.out_device = check_memory(m.out, c, "output", api);
  mutation::active();  // an unknown name is rejected before anything is enqueued
  auto b = single(state, s, m);
  std::lock_guard<std::mutex> lock(c.m);
  check_not_lost(c, m, api);  // any peer lost after a failure: refused, nothing enqueued
  b->collective = c.collectives + 1;
  enqueue(std::move(b));
  ++c.collectives;
}

message collective_message(op_kind kind, const void* in, void* out, std::size_t count, datatype t) {
  message m;
  m.kind = kind;
  m.in = in;
  m.out = out;
  m.count = count;
  m.type = t;
  return m;
}

}  // namespace

void all_reduce(stream_ref s, const void* in, void* out, std::size_t count, datatype t,
                reduce_op op, const communicator& c) {
  constexpr const char* api = "sluice::comm::all_reduce";
  const std::size_t bytes = checked_count(count, element_size(t), api);
  check_buffer(in, bytes, "input", api);
  check_buffer(out, bytes, "output", api);
  if (!known(op)) reject(errc::invalid_argument, api, "unknown reduce_op");
  if (in != out && overlap(in, bytes, out, bytes))
    reject(errc::invalid_argument, api,
           "the input and output overlap without being the same (in place)");
  message m = collective_message(op_kind::all_reduce, in, out, count, t);
  m.op = op;
  collective(s, m, communicator_state::of(c), api);
}

void broadcast(stream_ref s, void* buf, std::size_t count, datatype t, int root,
               const communicator& c) {
  constexpr const char* api = "sluice::comm::broadcast";
  const std::size_t bytes = checked_count(count, element_size(t), api);
  check_buffer(buf, bytes, "", api);
  const auto& state = communicator_state::of(c);
  check_rank(root, checked(state, api), "root", api);
  message m = collective_message(op_kind::broadcast, buf, buf, count, t);
  m.peer = root;
  collective(s, m, state, api);
}

void all_gather(stream_ref s, const void* in, void* out, std::size_t count_per_rank, datatype t,
                const communicator& c) {
  constexpr const char* api = "sluice::comm::all_gather";
  const auto& state = communicator_state::of(c);
  auto& cs = checked(state, api);
  const std::size_t bytes = checked_count(count_per_rank, element_size(t), api);
  // (count_per_rank <= INT_MAX elements of <= 8 bytes, size() <= INT_MAX: no overflow)
  const std::size_t total = bytes * static_cast<std::size_t>(cs.size);
  check_buffer(in, bytes, "input", api);
  check_buffer(out, total, "output", api);
  const void* own = static_cast<const char*>(out) + static_cast<std::size_t>(cs.rank) * bytes;
  if (in != own && overlap(in, bytes, out, total))
    reject(errc::invalid_argument, api,
           "the input overlaps the output without being this rank's own slot (in place)");
  collective(s, collective_message(op_kind::all_gather, in, out, count_per_rank, t), state, api);
}

}  // namespace detail

void send(stream_ref s, const void* buf, std::size_t bytes, int to, const communicator& c) {
  detail::message m;
  m.kind = detail::op_kind::send;
  m.in = buf;
  m.count = bytes;
  m.peer = to;
  detail::point_to_point(s, m, detail::communicator_state::of(c), "sluice::comm::send");
}

void recv(stream_ref s, void* buf, std::size_t bytes, int from, const communicator& c) {
  detail::message m;
  m.kind = detail::op_kind::recv;
  m.out = buf;
  m.count = bytes;
  m.peer = from;
  detail::point_to_point(s, m, detail::communicator_state::of(c), "sluice::comm::recv");
}

}  // namespace sluice::comm
