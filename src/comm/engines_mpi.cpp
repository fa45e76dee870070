// The engines of a build without NCCL (the host and HIP backends, CUDA
// without nccl.h): mpi only.
#include "engine.hpp"

#include <sluice/error.hpp>

namespace sluice::comm::detail {

engine default_engine() noexcept { return engine::mpi; }
bool nccl_available() noexcept { return false; }

void nccl_create(communicator_state&) {
  throw error(errc::not_supported, "sluice::comm: the nccl engine is not in this build", 0,
              "sluice::comm::communicator");
}
void nccl_enqueue(batch& b) noexcept { b.failure = "the nccl engine is not in this build"; }
std::string nccl_async_error(communicator_state&) noexcept { return {}; }
void nccl_abort(communicator_state&, const std::string&) noexcept {}
void nccl_destroy(communicator_state&) noexcept {}
bool nccl_settle(std::chrono::seconds) noexcept { return true; }

}  // namespace sluice::comm::detail
