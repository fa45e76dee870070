// The nccl engine's NCCL calls in a build without NCCL (the host and HIP
// backends, CUDA without nccl.h or libnccl): only the mpi engine runs, and a
// communicator asked for nccl is refused (errc::not_supported).
#include "comm/nccl/transport.hpp"

#include <sluice/error.hpp>

namespace sluice::comm::detail {

engine default_engine() noexcept { return engine::mpi; }
bool nccl_available() noexcept { return false; }

}  // namespace sluice::comm::detail

namespace sluice::comm::detail::nccl {

void create_lanes(communicator_state&) {
  throw error(errc::not_supported, "sluice::comm: the nccl engine is not in this build", 0,
              "sluice::comm::communicator");
}
void enqueue(batch& b) noexcept { b.failure = "the nccl engine is not in this build"; }
std::string async_error(communicator_state&) noexcept { return {}; }
void abort_lanes(communicator_state&, const std::string&) noexcept {}
void release_lanes(communicator_state&) noexcept {}
bool settle_lanes(std::chrono::seconds) noexcept { return true; }

}  // namespace sluice::comm::detail::nccl
