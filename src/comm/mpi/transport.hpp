// The mpi engine's transport: how the engine thread (engine_thread.cpp) posts
// a batch's messages with non-blocking MPI and tests them. The engine calls
// it; it calls nothing back. Internal.
#pragma once

#include "comm/impl/batch.hpp"
#include "comm/impl/cancelled_requests.hpp"
#include "comm/impl/communicator_state.hpp"

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sluice::comm::detail::mpi {

//! The engine thread's mpi part: what it keeps between passes beside its
//! batches (the refused sends' pieces it takes and drops).
class transport {
 public:
  explicit transport(cancelled_requests& cancelled) noexcept : cancelled_(cancelled) {}
  //! Posts m of b (post.cpp): whole, in pieces (a send's header first), or as
  //! a small collective; an MPI error code, MPI_SUCCESS when posted.
  int start(communicator_state& c, batch& b, message& m);
  //! Tests b's messages (poll.cpp): true when every one completed or failed
  //! (b.failure); stores the done flags of the pieces all of them completed.
  bool poll(batch& b);
  //! m of b is given up (b timed out or MPI_Finalize came): its requests
  //! cancelled.
  void cancel(batch& b, message& m);
  //! The refused sends' next pieces taken (receive.cpp); every one given up at stop.
  void drain_refused(bool stop);
  bool idle() const noexcept { return refused_.empty(); }
  // Whether this pass also looks on the other communicator for the send of a
  // receive (whole receives on `pieces`, receives in pieces on `mpi`): a send
  // and a receive whose sizes straddle twice the piece size travel on
  // different communicators. Every 32nd pass (the deadline passes).
  bool look_across = false;

 private:
  void poll_pieces(batch& b, message& m);  // m.done once every piece completed or one failed
  bool receive_probed(batch& b, message& m,
                      int& code);  // a whole receive, once its message is there
  // The pieces of sends whose receivers refused them (another size), taken
  // and dropped one after another (poll_pieces).
  struct refused_send {
    std::uint64_t pieces = 0, taken = 0;
    std::size_t piece = 0, last = 0;  // bytes of each piece and of the last
    int peer = 0, tag = 0;
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Request request = MPI_REQUEST_NULL;
    std::vector<char> scratch;
  };
  std::vector<refused_send> refused_;
  static bool drain_pieces(refused_send& d) noexcept;  // false once every piece was taken
  // A send of another size than m's receive, matched (`matched`, `bytes`):
  // taken into scratch and dropped (refused_), m failed saying its size.
  void refuse_matched(batch& b, message& m, MPI_Message& matched, int bytes);
  // m's sender's header says another size: its pieces are drained, m failed.
  void refuse_header(batch& b, message& m, int words);
  cancelled_requests& cancelled_;  // the engine thread's
};

// --- posting (post.cpp) ---------------------------------------------------------

//! Posts one message of b whole (or, `piece`, one piece of a collective:
//! never the small path, whose finish reads the whole message).
int post(communicator_state& c, batch& b, message& m, bool piece = false);
//! The next piece of m (m.posted); a message in pieces starts with start_pieces.
int post_piece(communicator_state& c, batch& b, message& m);
int start_pieces(communicator_state& c, batch& b, message& m);
//! The first of the ring's tags of the collective-th collective on c.ring; -1
//! when c has no ring.
int ring_tags(const communicator_state& c, std::uint64_t collective);
//! Whether a broadcast's pieces go as messages from the root to every rank
//! (on the ring's communicator), and how many requests each piece has.
bool broadcast_in_messages(const communicator_state& c, const message& m);
std::size_t broadcast_requests(const communicator_state& c, const message& m);

// --- small collectives as point-to-point messages (small_collectives.cpp) -------

int post_small(communicator_state& c, batch& b, message& m);
//! Every small collective of b: what it gathered, into its output (b finished
//! without failure).
void finish_small_collectives(batch& b) noexcept;
bool goes_small(const communicator_state& c, const message& m);
//! Whether b goes by post_small through b.scratch (what lets it start before
//! its stream gets there: engine_thread.cpp).
bool through_scratch(const communicator_state& c, const batch& b);
//! The bytes collective m writes at `out`.
std::size_t written_by(const communicator_state& c, const message& m);

// --- sizes (receive.cpp) ----------------------------------------------------------

//! What a receive's failure says when its send had another size.
template <typename Count>
std::string sent_other_size(Count bytes) {
  return ": the matching send had " + std::to_string(bytes) +
         " bytes (a receive must be exactly as large as its send)";
}

}  // namespace sluice::comm::detail::mpi
