// raw::nccl of sluice-bench-comm-cuda where the build found nccl.h and libnccl
// (SLUICE_BENCH_COMM_NCCL; comm_raw_gpu.hpp includes it): raw NCCL as
// nccl-tests calls it. comm_raw_no_nccl.hpp has the same members for the
// builds without it.
#pragma once

#include "raw/vendor.hpp"

#include <cuda_runtime.h>
#include <mpi.h>
#include <nccl.h>

#include <cstddef>
#include <string>

namespace raw {

//! Raw NCCL as nccl-tests calls it: its own communicator (ncclCommInitRank,
//! rank 0's unique id over MPI_Bcast) and its own stream on the rank's device;
//! the calls go back to back on that stream, synchronize() waits for them.
class nccl {
 public:
  static constexpr bool built = true;

  nccl() = default;
  nccl(const nccl&) = delete;
  nccl& operator=(const nccl&) = delete;
  ~nccl() {
    if (comm_ != nullptr) (void)ncclCommDestroy(comm_);
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }

  //! "NCCL 2.28.3" (the library's, at run time).
  static std::string version() {
    int v = 0;
    if (ncclGetVersion(&v) != ncclSuccess) return "NCCL (version unknown)";
    return "NCCL " + std::to_string(v / 10000) + "." + std::to_string(v / 100 % 100) + "." +
           std::to_string(v % 100);
  }

  //! Collective over world, with device current. Empty: ready; else why not
  //! (the same on every rank once the caller has agreed on it).
  std::string init(MPI_Comm world) {
    int rank = 0, n = 1;
    MPI_Comm_rank(world, &rank);
    MPI_Comm_size(world, &n);
    ncclUniqueId id{};
    int ok = 1;
    if (rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) ok = 0;
    MPI_Bcast(&ok, 1, MPI_INT, 0, world);
    if (!ok) return "ncclGetUniqueId failed on rank 0";
    MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, world);
    if (cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking) != cudaSuccess)
      return "cudaStreamCreateWithFlags failed";
    const ncclResult_t r = ncclCommInitRank(&comm_, n, id, rank);
    if (r != ncclSuccess) {
      comm_ = nullptr;
      return std::string("ncclCommInitRank: ") + ncclGetErrorString(r);
    }
    return {};
  }

  void sendrecv(const void* in, void* out, std::size_t bytes, int to, int from) {
    check(ncclGroupStart(), "ncclGroupStart");
    check(ncclSend(in, bytes, ncclUint8, to, comm_, stream_), "ncclSend");
    check(ncclRecv(out, bytes, ncclUint8, from, comm_, stream_), "ncclRecv");
    check(ncclGroupEnd(), "ncclGroupEnd");
  }
  void all_reduce(const float* in, float* out, std::size_t count) {
    check(ncclAllReduce(in, out, count, ncclFloat32, ncclSum, comm_, stream_), "ncclAllReduce");
  }
  void broadcast(float* buf, std::size_t count, int root) {
    check(ncclBroadcast(buf, buf, count, ncclFloat32, root, comm_, stream_), "ncclBroadcast");
  }
  void all_gather(const float* in, float* out, std::size_t count) {
    check(ncclAllGather(in, out, count, ncclFloat32, comm_, stream_), "ncclAllGather");
  }
  void synchronize() { raw::stream_synchronize(stream_); }

 private:
  static void check(ncclResult_t r, const char* what) {
    if (r != ncclSuccess) fail(what, ncclGetErrorString(r));
  }
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace raw
