// How a batch of sluice::comm fails (both engines): the first failure is the
// one its streams report.
#include "comm/impl/failure.hpp"

#include "comm/impl/communicator_state.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/error.hpp>

#include <cstdio>
#include <string>

namespace sluice::comm::detail {

void fail_message(batch& b, message& m, const std::string& what) {
  if (b.failure.empty()) b.failure = m.describe() + what;
  m.done = true;
}

void report_failure(batch& b) noexcept {
  if (b.failure.empty() || b.reported) return;
  b.reported = true;
  if (b.failed) b.failed->store(true);
  std::string message;
  try {
    message = "sluice::comm: rank " + std::to_string(b.comm->rank) + ": " + b.describe() + ": " +
              b.failure;
  } catch (...) {
    message = "sluice::comm: an operation failed (no memory to say more)";
  }
  for (stream_ref s : b.streams) {
    try {
      sluice::detail::report_stream_failure(s, errc::comm_failure, message);
    } catch (...) {
      // The stream is gone: nobody can ask. Nothing is lost: say it here.
      std::fprintf(stderr, "sluice: %s (its stream was destroyed)\n", message.c_str());
    }
  }
}

}  // namespace sluice::comm::detail
