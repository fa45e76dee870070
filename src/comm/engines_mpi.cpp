// The engines of a build without NCCL (the host and HIP backends, CUDA
// without nccl.h): mpi only.
#include "engine.hpp"

namespace sluice::comm::detail {

engine default_engine() noexcept { return engine::mpi; }
bool nccl_available() noexcept { return false; }

}  // namespace sluice::comm::detail
