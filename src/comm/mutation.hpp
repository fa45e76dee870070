// Test-only mutations of sluice::comm (SLUICE_COMM_MUTATION=<name>): each
// breaks one COMM rule on purpose, so that CI shows the COMM family catches
// it (tests/comm/CMakeLists.txt runs each; docs/conformance/mutations.md).
// Never set in production; read once, when the engine starts.
#pragma once

namespace sluice::comm::detail::mutation {

enum class kind {
  none,
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
  untraced,  //!< operations leave no span in a trace (ctest comm.<backend>.trace.mutation)
};

//! The mutation in force (SLUICE_COMM_MUTATION; errc::invalid_argument for an unknown name).
kind active();
inline bool is(kind k) { return active() == k; }

}  // namespace sluice::comm::detail::mutation
