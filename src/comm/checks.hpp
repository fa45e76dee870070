// sluice::comm's argument checks: every argument is checked before anything
// is enqueued (COMM-6), and a failed check throws sluice::error naming the
// API. Internal.
#pragma once

#include "comm/impl/communicator_state.hpp"
#include "comm/impl/message.hpp"

#include <sluice/comm.hpp>
#include <sluice/error.hpp>
#include <sluice/stream.hpp>

#include <cstddef>
#include <memory>
#include <string>

namespace sluice::comm::detail {

[[noreturn]] void reject(errc code, const char* api, const std::string& why);
bool known(reduce_op op);
communicator_state& checked(const std::shared_ptr<communicator_state>& state, const char* api);
void check_stream(stream_ref s, const communicator_state& c, const char* api);
void check_rank(int r, const communicator_state& c, const char* what, const char* api);
//! count elements of `bytes_each` bytes: the byte count, checked for what
//! MPI takes in one call (an int count).
std::size_t checked_count(std::size_t count, std::size_t bytes_each, const char* api);
void check_buffer(const void* p, std::size_t bytes, const char* which, const char* api);
//! A communicator that lost m's peer (any peer, for a collective) after a
//! failure, or whose NCCL communicators were aborted, refuses m with
//! errc::comm_failure (docs/comm.md "After a failure"). The caller holds c.m.
void check_not_lost(const communicator_state& c, const message& m, const char* api);
//! Device memory must be the communicator's device's. True when p is device
//! memory (what staging_plan.cpp copies through pinned memory).
bool check_memory(const void* p, const communicator_state& c, const char* which, const char* api);

}  // namespace sluice::comm::detail
