// sluice::comm's argument checks (checks.hpp): one vendor query per buffer
// and operation, the rest arithmetic on the arguments.
#include "comm/checks.hpp"

#include "comm/impl/failure.hpp"
#include "comm/mutation.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/graph.hpp>

#include <climits>
#include <cstdint>
#include <string>

namespace sluice::comm::detail {

[[noreturn]] void reject(errc code, const char* api, const std::string& why) {
  throw error(code, std::string(api) + ": " + why, 0, api);
}

bool known(reduce_op op) {
  return op == reduce_op::sum || op == reduce_op::prod || op == reduce_op::min ||
         op == reduce_op::max;
}

communicator_state& checked(const std::shared_ptr<communicator_state>& state, const char* api) {
  if (!state) reject(errc::invalid_handle, api, "the communicator is empty (moved from)");
  return *state;
}

void check_stream(stream_ref s, const communicator_state& c, const char* api) {
  const sluice::device d = s.device();  // errc::invalid_handle for a destroyed stream
  // Not in a graph's capture in this version (docs/graphs.md).
  if (sluice::is_capturing(s))
    reject(errc::capture_violation, api,
           "the stream captures a graph (not in this version); nothing was recorded and the "
           "capture stays valid");
  if (d != c.device)
    reject(errc::invalid_argument, api,
           "the stream is on device " + std::to_string(d.id()) +
               " but the communicator's device is " + std::to_string(c.device.id()));
}

void check_rank(int r, const communicator_state& c, const char* what, const char* api) {
  if (mutation::is(mutation::kind::skip_rank_checks)) return;
  if (r < 0 || r >= c.size)
    reject(errc::invalid_argument, api,
           std::string(what) + " rank " + std::to_string(r) + " is out of range [0, " +
               std::to_string(c.size) + ")");
}

// count elements of `bytes_each` bytes: the byte count, checked for what MPI
// takes in one call (an int count).
std::size_t checked_count(std::size_t count, std::size_t bytes_each, const char* api) {
  if (count > static_cast<std::size_t>(INT_MAX))
    reject(errc::not_supported, api,
           "count " + std::to_string(count) + " is larger than one message can carry (" +
               std::to_string(INT_MAX) + " elements)");
  if (bytes_each != 0 && count > SIZE_MAX / bytes_each)
    reject(errc::invalid_argument, api, "count * element size overflows");
  return count * bytes_each;
}

void check_buffer(const void* p, std::size_t bytes, const char* which, const char* api) {
  if (p == nullptr && bytes != 0)
    reject(
        errc::invalid_argument, api,
        std::string("the ") + which + " buffer is null with " + std::to_string(bytes) + " bytes");
}

void check_not_lost(const communicator_state& c, const message& m, const char* api) {
  if (c.kind == engine::nccl && !c.nccl_failure.empty())
    reject(errc::comm_failure, api,
           "the communicator's NCCL communicators were aborted after an earlier failure (" +
               c.nccl_failure + "): nothing was enqueued");
  const std::string why = lost_reason(c, m);
  if (!why.empty()) reject(errc::comm_failure, api, why + ": nothing was enqueued");
}

// Device memory must be the communicator's device's. True when p is device
// memory (what stage() copies through pinned memory): one vendor query per
// buffer and operation, here.
bool check_memory(const void* p, const communicator_state& c, const char* which, const char* api) {
  if (p == nullptr) return false;
  const int device = sluice::detail::device_memory_of(p);
  if (device >= 0 && device != c.device.id())
    reject(errc::invalid_argument, api,
           std::string("the ") + which + " buffer is memory of device " + std::to_string(device) +
               ", the communicator's device is " + std::to_string(c.device.id()));
  return device >= 0;
}

}  // namespace sluice::comm::detail
