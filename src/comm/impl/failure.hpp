// How a batch of sluice::comm fails: its first failure kept, reported once
// on its streams; and the peers a failure loses its communicator (docs/comm.md
// "After a failure"). Both engines'. Internal.
#pragma once

#include "comm/impl/batch.hpp"

#include <string>

namespace sluice::comm::detail {

struct communicator_state;

//! m failed: b's failure (the first one only) is m's description followed by
//! `what`; m is done.
void fail_message(batch& b, message& m, const std::string& what);
//! As fail_message, for a failure of m's peer (MPI failed on it): the
//! communicator loses that peer (lose_peer).
void fail_with_peer(batch& b, message& m, const std::string& what);
//! b.failure on b's streams, once (errc::comm_failure); stderr for a stream
//! that is gone.
void report_failure(batch& b) noexcept;

//! m of b waited for its peer in vain (a timeout, an MPI error: `what`, as
//! fail_message's): b's communicator loses that peer, every other rank for a
//! collective. Engine thread only.
void lose_peer(batch& b, const message& m, const std::string& what) noexcept;
//! How many peers lose_peer lost so far, on every communicator (the engine
//! thread's: a change makes it fail what is in flight with them).
unsigned long long peers_lost() noexcept;
//! Why m of c cannot go (its peer, or for a collective any peer, was lost),
//! or empty. On the engine thread, or under c.m.
std::string lost_reason(const communicator_state& c, const message& m);

}  // namespace sluice::comm::detail
