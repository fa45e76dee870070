// Test-only mutations: each breaks one guarantee of sluice on purpose, so that
// a run of the tests shows that they catch it (docs/conformance/mutations.md).
// One mechanism serves the host backend, sluice::comm and sluice::kokkos:
// SLUICE_TEST_MUTATION names the one guarantee broken in a process, as
// <part>.<name> (host.ignore_event_waits, comm.tag_zero, kokkos.unordered),
// read once by the one parser (test_mutation.cpp). Production code shows one
// seam, `mutation::is(mutation::kind::<name>)`.
//
// Compiled in only with the build option SLUICE_TEST_MUTATIONS (CI turns it on
// for its test tree). Without it every seam is a constant false that is
// inlined even at -O0, so the branch behind it is dead code, and the libraries
// hold neither the parser nor a mutation's name (ctest
// unit.mutations_compiled_out checks the built libraries).
#pragma once

#if defined(SLUICE_TEST_MUTATIONS)
#include <atomic>
#endif

namespace sluice::detail::mutation {

//! Every mutation, by the part of sluice whose guarantee it breaks; the names
//! of SLUICE_TEST_MUTATION are in test_mutation.cpp.
enum class kind : int {
  none,
  // The host backend (backends/host).
  ignore_event_waits,        //!< wait(event) / wait(stream) enqueue nothing (EVT-1, IND-3)
  complete_records_at_once,  //!< a record counts as complete when it is made (EVT-4, EVT-7)
  run_host_functions_early,  //!< host functions run at once on their own thread (HOST-1, ORD-1)
  lose_host_function_exceptions,  //!< exceptions of host functions are dropped (HOST-4)
  invert_priorities,              //!< low-priority streams are dispatched first (PRIO-4, unit test)
  borrow_own_queue,               //!< a borrowed stream gets a queue of its own (NAT-1)
  borrow_destroys_native,         //!< destroying a borrowed stream destroys its native (NAT-2)
  borrow_accepts_any,             //!< borrow() accepts the null stream (NAT-3)
  strided_ignores_pitch,          //!< a strided copy moves its bytes as one run (MEM-7, PEER-5)
  registered_counts_pageable,     //!< registered memory takes the pageable path (MEM-8)
  strided_peer_drops_last_row,    //!< a strided peer copy leaves out its last row (PEER-5)
  graph_launches_overlap,         //!< a launch does not wait for its exec's previous one (GRAPH-3)
  graph_ignores_dependencies,     //!< a launch starts every recorded operation at once (GRAPH-1, 2, 4)
  graph_events_not_recorded,      //!< a launch leaves the graph's events as they were (GRAPH-7)
  graph_replays_once,             //!< launches after the first skip the copies, fills and flag
                                  //!< operations (GRAPH-1, 8, 10)
  graph_launch_returns_early,     //!< a launch's operation completes when it has started the
                                  //!< recorded operations (GRAPH-2)
  graph_update_ignored,           //!< update() answers ok and keeps the old arguments (GRAPH-9)
  graph_discard_runs,             //!< a capture destroyed without end() runs its recording once
                                  //!< on its origin (GRAPH-12)
  graph_edges_unreduced,          //!< the recorded program keeps its implied edges (GRAPH-14)
  graph_other_threads_run,        //!< an operation that another thread than the capture's
                                  //!< enqueues on a capturing stream runs instead (GRAPH-11)
  graph_first_capture_fails,      //!< the first capture on each device throws (GRAPH-13)
  // sluice::comm (src/comm).
  post_at_enqueue,  //!< an operation starts when enqueued, not when its stream gets there (COMM-1)
  enqueue_waits,    //!< the enqueuing call waits for the operation to complete (COMM-2)
  one_at_a_time,    //!< the engine finishes one operation before it starts the next (COMM-3)
  tag_zero,         //!< every message has match number 0: MPI matches them as posted (COMM-4)
  collectives_unordered,  //!< collectives start as their streams reach them (COMM-5)
  skip_rank_checks,       //!< ranks and roots are not checked (COMM-6)
  no_timeout,             //!< operations wait for their peers for ever (COMM-7)
  receive_unprobed,       //!< a whole receive is posted before its message's size is known (COMM-7)
  piece_header_unchecked,  //!< a receive in pieces takes them without checking the send's size
                           //!< (COMM-7)
  chain_unchecked,         //!< a small collective starts before its stream gets there whatever was
                           //!< enqueued before it (COMM-1)
  early_deadline,          //!< a collective started early times out counting from its start, not
                           //!< from where its stream got there (COMM-7)
  forget_lost_peers,       //!< a failure loses no peer: later operations with it are enqueued
                           //!< and wait for their own timeouts (COMM-7)
  receive_unwritten,       //!< a whole receive completes without writing its buffer (the fault
                           //!< tests' data checks, tests/multihost/fault)
  untraced,  //!< operations leave no span in a trace (ctest comm.<backend>.trace.mutation)
  // sluice::kokkos (src/kokkos).
  unordered,        //!< submit runs f at once, outside the stream's order (KOK-1, KOK-3)
  waits,            //!< submit waits for the stream's work (KOK-2)
  global_fence,     //!< submit fences the whole device first (KOK-4)
  lose_exceptions,  //!< what a submitted function throws is dropped (KOK-5)
};

#if defined(SLUICE_TEST_MUTATIONS)

//! The mutation that `value` names (SLUICE_TEST_MUTATION's syntax): none for
//! null or empty; errc::invalid_argument, listing every name, for any other.
kind parse(const char* value);

//! Reads SLUICE_TEST_MUTATION, once per process (and says on stderr which
//! guarantee is broken); errc::invalid_argument for a name that is no
//! mutation, at every call. Where a part starts, so that a misspelt name
//! fails the run: the host backend's start-up, sluice::comm's operations,
//! sluice::kokkos's first submit.
void configure();

//! configure(), then the mutation in force.
kind active();

//! The mutation in force as an int; -1 until SLUICE_TEST_MUTATION is read.
extern std::atomic<int> chosen;
//! Reads SLUICE_TEST_MUTATION if no call has yet; the mutation in force
//! (none for a name that is no mutation: configure() reports that).
int read_chosen() noexcept;

//! Whether k is the mutation in force: one relaxed load once it is read.
inline bool is(kind k) noexcept {
  int c = chosen.load(std::memory_order_relaxed);
  if (c < 0) [[unlikely]]
    c = read_chosen();
  return c == static_cast<int>(k);
}

#else

// Always inlined, so that even an unoptimized build has no call and no symbol.
[[gnu::always_inline]] constexpr void configure() noexcept {}
[[gnu::always_inline]] constexpr kind active() noexcept { return kind::none; }
[[gnu::always_inline]] constexpr bool is(kind k) noexcept { return k == kind::none; }

#endif

}  // namespace sluice::detail::mutation
