// The raw side of sluice-bench-comm-cuda and sluice-bench-comm-hip (comm.cpp):
// the vendor's own calls for the hand-written staging loop (device buffers with
// a non-GPU-aware MPI; raw/vendor.hpp: CUDA's, or HIP's where the build defines
// SLUICE_BENCH_RAW_HIP), and raw NCCL on its own stream and communicator where
// the CUDA build found nccl.h and libnccl (SLUICE_BENCH_COMM_NCCL:
// comm_raw_nccl.hpp; no raw RCCL side: the nccl engine is CUDA's). Every call
// is checked: a failure names the call and aborts the job (MPI_Abort, status
// 2). comm_raw_host.hpp has the same members; the build picks one
// (SLUICE_COMM_RAW_HEADER), so comm.cpp names no vendor.
#pragma once

#include "raw/vendor.hpp"

#include <mpi.h>
#ifdef SLUICE_BENCH_COMM_NCCL
#include "comm_raw_nccl.hpp"
#else
#include "comm_raw_no_nccl.hpp"
#endif

#include <string>

namespace raw {

//! The staging loop's calls, as printed and written to the JSON.
inline const std::string staging_calls =
    std::string(api::memcpy_async_call) + " device->pinned, " + api::stream_synchronize_call +
    ", blocking MPI on pinned buffers, " + api::memcpy_async_call + " pinned->device, " +
    api::stream_synchronize_call;

//! Names the program in messages; a failed call then aborts the whole job.
inline void set_program(const char* name) {
  program = name;
  end_program = [] { MPI_Abort(MPI_COMM_WORLD, 2); };
}

}  // namespace raw
