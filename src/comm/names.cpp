// The names of sluice::comm's public enums (include/sluice/comm.hpp).
#include <sluice/comm.hpp>

namespace sluice::comm {

const char* to_string(engine e) noexcept {
  switch (e) {
    case engine::automatic: return "automatic";
    case engine::mpi: return "mpi";
    case engine::nccl: return "nccl";
  }
  return "unknown";
}

const char* to_string(reduce_op op) noexcept {
  switch (op) {
    case reduce_op::sum: return "sum";
    case reduce_op::prod: return "prod";
    case reduce_op::min: return "min";
    case reduce_op::max: return "max";
  }
  return "unknown";
}

}  // namespace sluice::comm
