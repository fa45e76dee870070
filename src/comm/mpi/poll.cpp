// The mpi engine tests a batch's messages: whole ones, a ring, a small
// collective's requests, a message's pieces one after another; and gives up
// those of a batch that timed out.
#include "comm/impl/communicator_state.hpp"
#include "comm/impl/failure.hpp"
#include "comm/impl/message.hpp"
#include "comm/mpi/ring_all_reduce.hpp"
#include "comm/mpi/transport.hpp"
#include "comm/mpi/types.hpp"
#include "comm/mutation.hpp"

#include <string>

namespace sluice::comm::detail::mpi {

namespace {

// The pieces every message of b completed: their done flags (the stream then
// copies them out of staging while MPI carries the next).
void release_pieces(batch& b) noexcept {
  while (b.pieces_released + 1 < b.pieces) {
    const std::size_t j = b.pieces_released;
    for (const message& m : b.messages)
      if (!m.done && (m.piece == 0 || mpi_state(m).completed <= j)) return;
    b.piece_done[j].flag->store(b.piece_done[j].value);
    ++b.pieces_released;
  }
}

}  // namespace

void transport::poll_pieces(batch& b, message& m) {
  auto& c = *b.comm;
  message_state& s = mpi_state(m);
  auto fail = [&](const std::string& why) { fail_message(b, m, ": " + why); };
  auto fail_peer = [&](const std::string& why) { fail_with_peer(b, m, ": " + why); };  // MPI's
  if (s.header_request != MPI_REQUEST_NULL) {
    int arrived = 0;
    MPI_Status status;
    const int code = MPI_Test(&s.header_request, &arrived, &status);
    if (code != MPI_SUCCESS) return fail_peer("its header failed: " + error_text(code));
    if (arrived && !s.header_checked) {
      int words = 0;
      MPI_Get_count(&status, MPI_UINT64_T, &words);
      const bool unchecked = mutation::is(mutation::kind::piece_header_unchecked);
      if (!unchecked && (words != 2 || s.header[0] != m.count || s.header[1] != m.piece))
        return refuse_header(b, m, words);
      s.header_checked = true;
    }
  }
  if (!s.header_checked && s.header_request != MPI_REQUEST_NULL && look_across &&
      m.kind == op_kind::recv) {
    // Its send may have gone whole (a size below twice the piece size), on
    // the communicator of whole messages with the same match number.
    int found = 0;
    MPI_Message matched = MPI_MESSAGE_NULL;
    MPI_Status status;
    const int code = MPI_Improbe(m.peer, m.tag, c.mpi, &found, &matched, &status);
    if (code != MPI_SUCCESS) return fail_peer("probing for its send failed: " + error_text(code));
    if (found) {
      MPI_Cancel(&s.header_request);  // not matched: it completes, cancelled
      cancelled_.requests.push_back(s.header_request);
      s.header_request = MPI_REQUEST_NULL;
      int bytes = 0;
      MPI_Get_count(&status, MPI_BYTE, &bytes);
      return refuse_matched(b, m, matched, bytes);
    }
  }
  if (!s.header_checked) return;
  const std::size_t bytes = bytes_of(m);
  const std::size_t n = pieces_of(m, bytes);
  const std::size_t streams = b.streams.size();
  // A send's, receive's or broadcast's pieces go as soon as they can (a
  // send's once the stream copied it in), several at once, at most
  // c.pieces_in_flight (0: no limit); an all_reduce's one after another (its
  // ring reuses the collective's tags). They complete in order.
  const bool p2p = m.kind == op_kind::send || m.kind == op_kind::recv;
  const bool messages = broadcast_in_messages(c, m);  // a broadcast's pieces: several at once too
  for (bool moved = true; moved && s.completed < n;) {
    moved = false;
    const std::size_t at_once = p2p || messages ? c.pieces_in_flight : 1;
    while (s.posted < n && (at_once == 0 || s.posted - s.completed < at_once)) {
      if (m.kind != op_kind::recv && s.posted > 0) {
        const flag_lease& a = b.piece_arrivals[(s.posted - 1) * streams + m.stream];
        if (a.flag->load() < a.value) break;
      }
      const int code = post_piece(c, b, m);
      if (code != MPI_SUCCESS)
        return fail_peer("piece " + std::to_string(s.posted + 1) + " of " + std::to_string(n) +
                         " could not start: " + error_text(code));
      moved = true;
    }
    while (s.completed < s.posted) {
      int completed = 0;
      MPI_Status status;
      int code = MPI_SUCCESS;
      if (p2p) {
        code = MPI_Test(&s.piece_requests[s.completed], &completed, &status);
      } else if (messages) {
        const std::size_t per = broadcast_requests(c, m);
        code = MPI_Testall(static_cast<int>(per), &s.piece_requests[s.completed * per], &completed,
                           MPI_STATUSES_IGNORE);
      } else if (s.ring != nullptr) {
        bool finished = false;
        code = s.ring->test(finished);
        completed = finished ? 1 : 0;
      } else {
        code = MPI_Test(&s.request, &completed, &status);
      }
      if (code != MPI_SUCCESS)
        return fail_peer(
            "piece " + std::to_string(s.completed + 1) + " of " + std::to_string(n) +
            " failed: " + error_text(code == MPI_ERR_IN_STATUS ? status.MPI_ERROR : code));
      if (!completed) break;
      if (m.kind == op_kind::recv) {
        int received = 0;
        MPI_Get_count(&status, MPI_BYTE, &received);
        if (static_cast<std::size_t>(received) != piece_range(m, bytes, s.completed).length)
          return fail("piece " + std::to_string(s.completed + 1) + " had " +
                      std::to_string(received) + " bytes");
      }
      s.ring.reset();
      ++s.completed;
      moved = true;
    }
  }
  if (s.completed < n) return;
  if (s.header_request == MPI_REQUEST_NULL) m.done = true;  // a send's header went too
}

bool transport::poll(batch& b) {
  bool all_done = true;
  for (auto& m : b.messages) {
    if (m.done) continue;
    message_state& s = mpi_state(m);
    if (m.piece != 0) {
      poll_pieces(b, m);
      if (!m.done) all_done = false;
      continue;
    }
    int completed = 0;
    MPI_Status status;
    int code = MPI_SUCCESS;
    if (s.ring != nullptr) {
      bool finished = false;
      code = s.ring->test(finished);
      completed = finished ? 1 : 0;
      status.MPI_ERROR = code;
    } else if (s.small) {
      code = MPI_Testall(static_cast<int>(b.requests.size()), b.requests.data(), &completed,
                         MPI_STATUSES_IGNORE);
      status.MPI_ERROR = code;  // (finish() writes the result: finish_small)
    } else {
      if (s.probing && !receive_probed(b, m, code)) {
        all_done = all_done && m.done;
        continue;
      }
      if (code == MPI_SUCCESS) code = MPI_Test(&s.request, &completed, &status);
    }
    if (code != MPI_SUCCESS) {
      const std::string what =
          " failed: " + error_text(code == MPI_ERR_IN_STATUS ? status.MPI_ERROR : code);
      if (b.failure.empty()) b.failure = m.describe() + what;
      lose_peer(b, m, what);
      completed = 1;
    }
    if (!completed) {
      all_done = false;
      continue;
    }
    m.done = true;
    if (m.kind == op_kind::recv && b.failure.empty()) {
      int received = 0;
      MPI_Get_count(&status, MPI_BYTE, &received);
      if (static_cast<std::size_t>(received) != m.count)
        b.failure = m.describe() + sent_other_size(received);
    }
  }
  if (b.pieces > 1) release_pieces(b);
  return all_done;
}

void transport::cancel(batch& b, message& m) {
  message_state& s = mpi_state(m);
  if (s.ring != nullptr) s.ring->cancel(cancelled_.requests);
  if (s.small)
    for (MPI_Request& r : b.requests) cancelled_.cancel(r);
  for (MPI_Request& r : s.piece_requests) cancelled_.cancel(r);
  for (MPI_Request* r : {&s.request, &s.header_request}) cancelled_.cancel(*r);
}

}  // namespace sluice::comm::detail::mpi
