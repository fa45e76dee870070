// Running a host-function batch on the GPU backend (batch.hpp): on a runner
// thread, once the stream has stored the batch's ticket into its signal word
// (or the vendor callback handed it over), every function of the batch in
// order, then the ticket into the gate word: the stream goes on.
#include "host_func/batch.hpp"

#include "backend_rules.hpp"
#include "engine.hpp"
#include "graph.hpp"
#include "host_func/host_holds.hpp"
#include "host_func/joins.hpp"
#include "host_functions.hpp"
#include "stream_state.hpp"

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>

namespace sluice::detail {

namespace {

thread_local stream_state* tls_host_stream = nullptr;
thread_local std::uint32_t tls_host_ticket = 0;
thread_local const char* tls_host_path = nullptr;

void run_host_batch(host_batch* batch) noexcept {
  stream_state& s = *batch->stream;
  // The signal can be seen before the enqueue that wrote it has put the gate
  // wait behind it and published the ticket: wait for that (a few vendor-call
  // lengths at most), so that work a function enqueues on its own stream
  // lands behind the gate (HOST-1, HOST-3) and a record it makes carries its
  // ticket (a self-wait through that event is an error). Against the
  // simulated runtime ERR-4's event-synchronize-in-own-host-function once saw
  // no error: the record landed before the gate. (Taking enqueue_m here
  // instead made the enqueuing thread's back-to-back host functions starve
  // this thread.)
  while (static_cast<std::int32_t>(s.gate_enqueued.load(std::memory_order_acquire) -
                                   batch->ticket) < 0)
    std::this_thread::yield();
  tls_host_stream = &s;
  tls_host_ticket = batch->ticket;
  tls_host_path = batch->path;
  run_batch_task(s, std::move(batch->first));
  run_joined_functions(batch);
  // No later function reaches this batch through the stream: then no join
  // still holds it (the enqueuing thread reads open_batch while `joining`),
  // and it may be freed below.
  host_batch* expected = batch;
  s.open_batch.compare_exchange_strong(expected, nullptr, std::memory_order_seq_cst);
  for (unsigned i = 0; s.joining.load(std::memory_order_seq_cst); ++i) {
    if (i < 64)
      word_watch::cpu_relax();
    else
      std::this_thread::yield();  // the joining thread was preempted
  }
  tls_host_stream = nullptr;
  tls_host_ticket = 0;
  tls_host_path = nullptr;
  // The stream no longer holds for the host once the gate opens, which
  // nothing can stop now: the count drops first, so that whoever saw the
  // gate pass (a synchronize of this stream) also sees this stream holding no
  // more (a signal enqueued meanwhile behind the gate wait waits for the
  // store below, a few instructions, and for nothing else).
  release_batch_hold(s);
  // Open the gate: the stream's device-side wait for this ticket passes.
  s.gate.host->store(batch->ticket, std::memory_order_release);
  delete batch;
  s.release();
}

}  // namespace

void run_batch_task(stream_state& s, std::unique_ptr<host_task> task) noexcept {
  std::optional<std::string> failure = run_host_task(*task);
  task.reset();  // the function's captures die before later work may run
  if (failure) s.failures.add(errc::host_function_failed, std::move(*failure));
}

void fire_host_batch(void* data) noexcept { run_host_batch(static_cast<host_batch*>(data)); }

void hand_over(void* data) {
  auto* batch = static_cast<host_batch*>(data);
  try {
    engine().host_functions.submit([batch] { run_host_batch(batch); });
  } catch (...) {
    run_host_batch(batch);  // no memory to hand over: run it here rather than lose it
  }
}

stream_state* current_host_function_stream() noexcept { return tls_host_stream; }
std::pair<stream_state*, std::uint32_t> exchange_host_function_stream(
    stream_state* s, std::uint32_t ticket) noexcept {
  const std::pair<stream_state*, std::uint32_t> before{tls_host_stream, tls_host_ticket};
  tls_host_stream = s;
  tls_host_ticket = ticket;
  return before;
}
std::uint32_t current_host_function_ticket() noexcept { return tls_host_ticket; }

void check_not_self_wait(const stream_state& s, std::uint32_t tickets, const char* api_name) {
  refuse_position_self_wait(tls_host_stream == &s && tls_host_ticket <= tickets, api_name);
}

const char* running_host_function_path() noexcept { return tls_host_path; }

}  // namespace sluice::detail
