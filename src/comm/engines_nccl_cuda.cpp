// The engines of the CUDA build with NCCL (cmake/SluiceComm.cmake: nccl.h and
// libnccl found): mpi and nccl; `automatic` picks nccl. The nccl engine puts
// its NCCL calls on the streams' native cudaStream_t when the operation is
// enqueued, between the stream's arrival flag and its done flag; the engine
// thread (mpi_engine.cpp) exchanges send and receive sizes over MPI, watches
// the done flags and the communicator's asynchronous error, and aborts the
// NCCL communicator when an operation outlives SLUICE_COMM_TIMEOUT_S
// (docs/comm.md "The nccl engine").
#include "engine.hpp"

#include <sluice/error.hpp>
#include <sluice/memory.hpp>
#include <sluice/native.hpp>
#include <sluice/stream.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace sluice::comm::detail {

engine default_engine() noexcept { return engine::nccl; }
bool nccl_available() noexcept { return true; }

namespace {

constexpr const char* api = "sluice::comm::communicator";

ncclComm_t handle(const communicator_state& c) { return static_cast<ncclComm_t>(c.nccl); }

[[noreturn]] void fail(const std::string& why, const char* call) {
  throw error(errc::comm_failure, std::string(api) + ": " + why, 0, call);
}

std::string nccl_text(ncclResult_t r) {
  const char* text = ncclGetErrorString(r);
  return text != nullptr ? text : "NCCL error " + std::to_string(static_cast<int>(r));
}

ncclDataType_t nccl_type(datatype t) {
  switch (t) {
    case datatype::int32: return ncclInt32;
    case datatype::int64: return ncclInt64;
    case datatype::float32: return ncclFloat32;
    case datatype::float64: return ncclFloat64;
  }
  return ncclInt8;
}

ncclRedOp_t nccl_op(reduce_op op) {
  switch (op) {
    case reduce_op::sum: return ncclSum;
    case reduce_op::prod: return ncclProd;
    case reduce_op::min: return ncclMin;
    case reduce_op::max: return ncclMax;
  }
  return ncclSum;
}

// The current device for the NCCL calls, restored after.
struct on_device {
  int previous = -1;
  explicit on_device(int d) {
    if (cudaGetDevice(&previous) != cudaSuccess) previous = -1;
    if (previous != d) cudaSetDevice(d);
  }
  ~on_device() {
    int now = -1;
    if (previous >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous)
      cudaSetDevice(previous);
  }
  on_device(const on_device&) = delete;
  on_device& operator=(const on_device&) = delete;
};

// One NCCL group of 1-byte sends and receives with every peer, waited for:
// NCCL connects peers on their first send or receive, and that connection
// waits for the peer; made here (the constructor is collective) so that no
// later enqueue waits for a peer (COMM-2).
void connect_peers(communicator_state& c) {
  if (c.size < 2) return;
  // sluice's own stream and memory: a vendor stream made here could wait for
  // the device's held streams (CUDA synchronizes at stream creation past a
  // number of live streams).
  sluice::stream s(c.device);
  sluice::device_buffer<unsigned char> scratch(c.device, static_cast<std::size_t>(2 * c.size));
  cudaStream_t stream = native_handle(s);
  unsigned char* base = scratch.data();
  ncclResult_t r = ncclGroupStart();
  for (int p = 0; p < c.size && r == ncclSuccess; ++p) {
    if (p == c.rank) continue;
    r = ncclSend(base + p, 1, ncclUint8, p, handle(c), stream);
    if (r == ncclSuccess) r = ncclRecv(base + c.size + p, 1, ncclUint8, p, handle(c), stream);
  }
  const ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess) fail("connecting the peers failed: " + nccl_text(r), "ncclSend");
  s.synchronize();
}

}  // namespace

void nccl_create(communicator_state& c) {
  // Every rank learns whether rank 0 got an id before anyone waits in
  // ncclCommInitRank for it.
  ncclUniqueId id{};
  int ok = 1;
  if (c.rank == 0 && ncclGetUniqueId(&id) != ncclSuccess) ok = 0;
  {
    auto lock = progress::mpi_guard();
    if (MPI_Bcast(&ok, 1, MPI_INT, 0, c.mpi) != MPI_SUCCESS ||
        (ok && MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, c.mpi) != MPI_SUCCESS))
      fail("broadcasting the ncclUniqueId failed", "MPI_Bcast");
  }
  if (!ok) fail("ncclGetUniqueId failed on rank 0", "ncclGetUniqueId");
  // Every connection made now, none at an enqueue (COMM-2): NCCL's collective
  // connections at init (unless the program set NCCL_RUNTIME_CONNECT), the
  // peers' below.
  setenv("NCCL_RUNTIME_CONNECT", "0", 0);
  const on_device on(c.device.id());
  ncclComm_t comm = nullptr;
  const ncclResult_t r = ncclCommInitRank(&comm, c.size, id, c.rank);
  if (r != ncclSuccess) fail("ncclCommInitRank failed: " + nccl_text(r), "ncclCommInitRank");
  c.nccl = comm;
  connect_peers(c);
}

void nccl_enqueue(batch& b) noexcept {
  auto& c = *b.comm;  // the caller holds c.m
  if (c.nccl == nullptr) {
    b.failure = "the communicator's NCCL communicator was aborted after an earlier failure (" +
                c.nccl_failure + ")";
    return;
  }
  try {
    std::vector<cudaStream_t> natives;
    natives.reserve(b.streams.size());
    for (stream_ref s : b.streams) natives.push_back(native_handle(s));
    const on_device on(c.device.id());
    ncclComm_t comm = handle(c);
    ncclResult_t r = ncclGroupStart();
    const char* call = "ncclGroupStart";
    for (const message& m : b.messages) {
      if (r != ncclSuccess) break;
      cudaStream_t st = natives[m.stream];
      switch (m.kind) {
        case op_kind::send:
          call = "ncclSend";
          r = ncclSend(m.in, m.count, ncclUint8, m.peer, comm, st);
          break;
        case op_kind::recv:
          call = "ncclRecv";
          r = ncclRecv(m.out, m.count, ncclUint8, m.peer, comm, st);
          break;
        case op_kind::all_reduce:
          call = "ncclAllReduce";
          r = ncclAllReduce(m.in, m.out, m.count, nccl_type(m.type), nccl_op(m.op), comm, st);
          break;
        case op_kind::broadcast:
          call = "ncclBroadcast";
          r = ncclBroadcast(m.in, m.out, m.count, nccl_type(m.type), m.peer, comm, st);
          break;
        case op_kind::all_gather:
          call = "ncclAllGather";
          r = ncclAllGather(m.in, m.out, m.count, nccl_type(m.type), comm, st);
          break;
      }
    }
    const ncclResult_t end = ncclGroupEnd();
    if (r == ncclSuccess && end != ncclSuccess) {
      r = end;
      call = "ncclGroupEnd";
    }
    if (r != ncclSuccess) b.failure = std::string(call) + " failed: " + nccl_text(r);
  } catch (const std::exception& e) {
    b.failure = std::string("the NCCL calls could not be made: ") + e.what();
  }
}

std::string nccl_async_error(communicator_state& c) noexcept {
  ncclComm_t comm = handle(c);  // only the engine thread (nccl_abort) clears it
  if (comm == nullptr) return {};
  ncclResult_t state = ncclSuccess;
  const ncclResult_t r = ncclCommGetAsyncError(comm, &state);
  if (r != ncclSuccess) return "ncclCommGetAsyncError failed: " + nccl_text(r);
  if (state == ncclSuccess || state == ncclInProgress) return {};
  return "ncclCommGetAsyncError: " + nccl_text(state);
}

void nccl_abort(communicator_state& c, const std::string& why) noexcept {
  ncclComm_t comm = nullptr;
  try {
    std::lock_guard<std::mutex> lock(c.m);  // no enqueue calls NCCL meanwhile
    if (c.nccl == nullptr) return;
    comm = handle(c);
    c.nccl = nullptr;  // later operations of c fail at once
    c.nccl_failure = why;
  } catch (...) {
    return;  // No lock: nothing to do but leave the communicator as it is.
  }
  // ncclCommAbort may wait for the device work of the communicator's streams,
  // which may wait in turn for the engine (a receive's gate, stored when its
  // batch finishes): it runs on a thread of its own, and the engine goes on
  // finishing what the abort ends.
  try {
    std::thread([comm] { ncclCommAbort(comm); }).detach();
  } catch (...) {
    ncclCommAbort(comm);  // no thread: here, as the last resort
  }
}

void nccl_destroy(communicator_state& c) noexcept {
  if (c.nccl == nullptr) return;
  // Every operation of c is done: each batch held c until its done flags.
  ncclCommDestroy(handle(c));
  c.nccl = nullptr;
}

}  // namespace sluice::comm::detail
