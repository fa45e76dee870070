// How a batch of sluice::comm fails: its first failure kept, reported once
// on its streams. Both engines'. Internal.
#pragma once

#include "comm/impl/batch.hpp"

#include <string>

namespace sluice::comm::detail {

//! m failed: b's failure (the first one only) is m's description followed by
//! `what`; m is done.
void fail_message(batch& b, message& m, const std::string& what);
//! b.failure on b's streams, once (errc::comm_failure); stderr for a stream
//! that is gone.
void report_failure(batch& b) noexcept;

}  // namespace sluice::comm::detail
