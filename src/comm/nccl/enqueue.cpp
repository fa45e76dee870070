// The nccl engine puts its NCCL calls on the streams' native cudaStream_t
// when the operation is enqueued, between the stream's arrival event and its
// done event; the engine thread (nccl/poll.cpp) exchanges send and receive
// sizes over MPI, watches the done events and the communicator's asynchronous
// error, and aborts the NCCL communicator when an operation outlives
// SLUICE_COMM_TIMEOUT_S (docs/comm.md "The nccl engine").
#include "comm/impl/batch.hpp"
#include "comm/impl/communicator_state.hpp"
#include "comm/nccl/lanes.hpp"
#include "comm/nccl/transport.hpp"

#include <sluice/native.hpp>
#include <sluice/stream.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace sluice::comm::detail::nccl {

namespace {

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

}  // namespace

void enqueue(batch& b) noexcept {
  auto& c = *b.comm;  // the caller holds c.m
  if (c.nccl.empty()) {
    b.failure = "the communicator's NCCL communicators were aborted after an earlier failure (" +
                c.nccl_failure + ")";
    return;
  }
  try {
    // Kept by the thread from one operation to the next: no allocation per
    // operation once the largest batch was seen.
    thread_local std::vector<cudaStream_t> natives;
    thread_local std::vector<std::pair<ncclComm_t, const message*>> calls;
    natives.clear();
    calls.clear();
    for (stream_ref s : b.streams) natives.push_back(native_handle(s));
    const on_device on(c.device.id());
    // A group's messages by lane: NCCL may run the kernels of several NCCL
    // communicators of one group one after another (it does not promise that
    // they progress together); in lane order on every rank, a send's kernel
    // never waits behind a kernel whose peer waits behind it.
    for (const message& m : b.messages)
      calls.emplace_back(m.kind == op_kind::send || m.kind == op_kind::recv
                             ? message_lane(c, m)
                             : collective_lane(c, b.collective),
                         &m);
    auto lane_index = [&c](ncclComm_t comm) {
      return std::find(c.nccl.begin(), c.nccl.end(), static_cast<void*>(comm)) - c.nccl.begin();
    };
    // Stable, by lane; in place (std::stable_sort takes a buffer from the
    // heap, even for one call): a group has a few messages.
    for (std::size_t i = 1; i < calls.size(); ++i)
      for (std::size_t j = i; j > 0 && lane_index(calls[j].first) < lane_index(calls[j - 1].first);
           --j)
        std::swap(calls[j], calls[j - 1]);
    // The calls of the batch's first lane go on their own streams; those of
    // later lanes on the communicator's helper stream, which waits for the
    // batch's streams first and which they wait for after: NCCL runs the
    // kernels of two NCCL communicators on one stream one after another (a
    // send and a receive with one peer are on two lanes, and ran at half
    // the bandwidth on 2x H100), on two streams at once.
    const auto first_lane = lane_index(calls.front().first);
    const bool split =
        c.nccl_helper != nullptr && std::any_of(calls.begin(), calls.end(), [&](const auto& x) {
          return lane_index(x.first) != first_lane;
        });
    if (split)
      for (stream_ref s : b.streams) c.nccl_helper->wait(s);
    const cudaStream_t helper = split ? native_handle(*c.nccl_helper) : nullptr;
    ncclResult_t r = ncclSuccess;
    const char* call = "ncclGroupStart";
    // One NCCL group per stream set: the first lane's, then the helper's.
    for (int part = 0; part < (split ? 2 : 1) && r == ncclSuccess; ++part) {
      r = ncclGroupStart();
      call = "ncclGroupStart";
      for (const auto& [comm, mp] : calls) {
        if (r != ncclSuccess) break;
        const bool on_helper = split && lane_index(comm) != first_lane;
        if (on_helper != (part == 1)) continue;
        const message& m = *mp;
        cudaStream_t st = on_helper ? helper : natives[m.stream];
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
    }
    if (split)
      for (stream_ref s : b.streams) s.wait(*c.nccl_helper);
    if (r != ncclSuccess) b.failure = std::string(call) + " failed: " + nccl_text(r);
  } catch (const std::exception& e) {
    b.failure = std::string("the NCCL calls could not be made: ") + e.what();
  }
}

std::string async_error(communicator_state& c) noexcept {
  // Only the engine thread (abort_lanes) empties c.nccl, and this is the engine's.
  for (void* lane : c.nccl) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(static_cast<ncclComm_t>(lane), &state);
    if (r != ncclSuccess) return "ncclCommGetAsyncError failed: " + nccl_text(r);
    if (state != ncclSuccess && state != ncclInProgress)
      return "ncclCommGetAsyncError: " + nccl_text(state);
  }
  return {};
}

}  // namespace sluice::comm::detail::nccl
