// raw::nccl where sluice-bench-comm has no raw NCCL side (no NCCL found at
// configure time, HIP, host): init() says why, and comm.cpp skips the nccl
// engine's rows. The members of comm_raw_nccl.hpp's raw::nccl, never called.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <string>

namespace raw {

class nccl {
 public:
  static constexpr bool built = false;
  static std::string version() { return "NCCL (not in this build)"; }
  std::string init(MPI_Comm) {
    return "this bench has no raw NCCL side (built without NCCL: nccl.h and libnccl are looked "
           "for on the CUDA backend only, at configure time)";
  }
  void sendrecv(const void*, void*, std::size_t, int, int) {}
  void all_reduce(const float*, float*, std::size_t) {}
  void broadcast(float*, std::size_t, int) {}
  void all_gather(const float*, float*, std::size_t) {}
  void synchronize() {}
};

}  // namespace raw
