// A simulated NCCL (libnccl.so.2) for the simulated CUDA runtime: the calls
// sluice's nccl engine makes (src/comm/nccl/), carried over
// MPI, so that the COMM suite runs under the nccl engine without a GPU (ctest
// sim.comm.cuda.nccl.np2). Modelled on what NCCL does, as far as sluice
// relies on it:
// - An operation (or a group's operations) runs on its stream's own thread
//   (sluice_sim_stream_op), in stream order, holding the stream until done,
//   as NCCL's kernel does. A group over several streams runs once all of them
//   got there, and holds each until it is done.
// - A communicator's operations run one after another, in the order they were
//   enqueued, whichever stream gets there first (NCCL orders a communicator's
//   kernels across streams).
// - Sends match receives per peer in enqueue order (one MPI tag).
// - ncclCommAbort ends the operations that wait (their stream goes on) and
//   sets the asynchronous error. A receive of another size than its send
//   (MPI truncates it, or it is short) holds its stream until the abort, as
//   NCCL's kernel would wait for bytes that never come; NCCL does not know.
// Needs MPI_THREAD_MULTIPLE (the operations call MPI on the streams' threads).
// Not modelled: devices (the current device is not checked), NCCL's own
// eager or rendezvous limits, configurations, user buffer registration.
#include <cuda_runtime_api.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

extern "C" cudaError_t sluice_sim_stream_op(cudaStream_t h, void (*fn)(void*), void* data);

struct ncclComm {
  MPI_Comm mpi = MPI_COMM_NULL;
  int rank = 0;
  int size = 0;
  std::atomic<bool> aborted{false};
  std::atomic<int> async{ncclSuccess};
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t issued = 0;    // under m: launches enqueued
  std::uint64_t finished = 0;  // under m: launches done (in order)
};

namespace {

constexpr int magic = 0x51ce0cc1;
constexpr int p2p_tag = 7;

struct unique {
  int magic;
  int root;  // MPI_COMM_WORLD rank of the process that made it
  int seq;
};

std::size_t type_size(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64: return 8;
    default: return 0;
  }
}

MPI_Datatype mpi_type(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return MPI_INT8_T;
    case ncclUint8: return MPI_UINT8_T;
    case ncclInt32: return MPI_INT32_T;
    case ncclUint32: return MPI_UINT32_T;
    case ncclInt64: return MPI_INT64_T;
    case ncclUint64: return MPI_UINT64_T;
    case ncclFloat32: return MPI_FLOAT;
    case ncclFloat64: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

MPI_Op mpi_op(ncclRedOp_t op) {
  switch (op) {
    case ncclSum: return MPI_SUM;
    case ncclProd: return MPI_PROD;
    case ncclMin: return MPI_MIN;
    case ncclMax: return MPI_MAX;
    default: return MPI_OP_NULL;
  }
}

enum class kind { send, recv, all_reduce, broadcast, all_gather };

struct pending {
  kind k;
  const void* in;
  void* out;
  std::size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int peer;  // send: to; recv: from; broadcast: root
  ncclComm_t comm;
  cudaStream_t stream;
};

thread_local int group_depth = 0;
thread_local std::vector<pending> group_ops;

// One communicator's share of a group: run on the thread of its first stream
// once every stream of it got there and the launches before it are done.
struct launch {
  ncclComm_t comm;
  std::uint64_t seq;
  std::vector<pending> ops;
  std::size_t streams = 0;
  std::size_t arrived = 0;  // under comm->m
  bool done = false;        // under comm->m
};

struct part {
  std::shared_ptr<launch> l;
  bool leader;
};

void fail(ncclComm_t c, ncclResult_t r) {
  int expected = ncclSuccess;
  c->async.compare_exchange_strong(expected, r);
}

// Starts every operation with non-blocking MPI and waits for them (or the abort).
void execute(launch& l) {
  ncclComm_t c = l.comm;
  std::vector<MPI_Request> requests;
  std::vector<bool> cancellable;    // point-to-point (MPI cannot cancel a collective)
  std::vector<long long> receives;  // a receive's bytes; -1: not a receive
  std::vector<const pending*> of;   // each request's operation
  for (const pending& p : l.ops) {
    const std::size_t bytes = p.count * type_size(p.type);
    MPI_Request r = MPI_REQUEST_NULL;
    int code = MPI_SUCCESS;
    switch (p.k) {
      case kind::send:
        code = MPI_Isend(p.in, static_cast<int>(bytes), MPI_BYTE, p.peer, p2p_tag, c->mpi, &r);
        break;
      case kind::recv:  // posted once its message is there (below)
        break;
      case kind::all_reduce:
        code = MPI_Iallreduce(p.in == p.out ? MPI_IN_PLACE : p.in, p.out, static_cast<int>(p.count),
                              mpi_type(p.type), mpi_op(p.op), c->mpi, &r);
        break;
      case kind::broadcast:
        if (c->rank == p.peer && p.in != p.out) std::memmove(p.out, p.in, bytes);
        code = MPI_Ibcast(p.out, static_cast<int>(p.count), mpi_type(p.type), p.peer, c->mpi, &r);
        break;
      case kind::all_gather: {
        const void* own =
            static_cast<const char*>(p.out) + static_cast<std::size_t>(c->rank) * bytes;
        code = MPI_Iallgather(p.in == own ? MPI_IN_PLACE : p.in, static_cast<int>(p.count),
                              mpi_type(p.type), p.out, static_cast<int>(p.count), mpi_type(p.type),
                              c->mpi, &r);
        break;
      }
    }
    if (code != MPI_SUCCESS) {
      fail(c, ncclSystemError);
      continue;
    }
    requests.push_back(r);
    of.push_back(&p);
    cancellable.push_back(p.k == kind::send || p.k == kind::recv);
    receives.push_back(p.k == kind::recv ? static_cast<long long>(bytes) : -1);
  }
  // A receive is posted only once its message arrived and exactly as large
  // (MPI_Improbe, MPI_Imrecv): Open MPI writes past a receive buffer smaller
  // than a send above its eager size (docs/comm.md "Failures"), which would
  // overrun sluice's staging slot. Another size is taken into scratch and
  // the receive is stuck, as NCCL's would be.
  std::vector<bool> unposted(requests.size());
  for (std::size_t i = 0; i < receives.size(); ++i) unposted[i] = receives[i] >= 0;
  std::vector<char> scratch;
  bool mismatched = false;
  for (;;) {
    if (c->aborted.load()) {
      for (std::size_t i = 0; i < requests.size(); ++i)
        if (requests[i] != MPI_REQUEST_NULL && cancellable[i])
          MPI_Cancel(&requests[i]);  // never completed: left to MPI (collectives too)
      return;
    }
    bool waiting = false;
    std::vector<int> held;  // peers whose earlier receive is still unposted
    for (std::size_t i = 0; i < requests.size(); ++i) {
      if (!unposted[i]) continue;
      const int peer = of[i]->peer;
      if (std::find(held.begin(), held.end(), peer) == held.end()) {
        int there = 0;
        MPI_Message msg = MPI_MESSAGE_NULL;
        MPI_Status st;
        if (MPI_Improbe(peer, p2p_tag, c->mpi, &there, &msg, &st) == MPI_SUCCESS && there) {
          int count = 0;
          MPI_Get_count(&st, MPI_BYTE, &count);
          if (count == receives[i]) {
            MPI_Imrecv(of[i]->out, count, MPI_BYTE, &msg, &requests[i]);
          } else {
            scratch.resize(static_cast<std::size_t>(count) + 1);
            MPI_Mrecv(scratch.data(), count, MPI_BYTE, &msg, MPI_STATUS_IGNORE);
            mismatched = true;
          }
          unposted[i] = false;
          continue;
        }
      }
      held.push_back(peer);
      waiting = true;
    }
    int all = 0;
    const int code =
        MPI_Testall(static_cast<int>(requests.size()), requests.data(), &all, MPI_STATUSES_IGNORE);
    // A receive of another size than its send (only exact ones are posted).
    const bool stuck = code != MPI_SUCCESS || mismatched;
    if (waiting) all = 0;
    if (stuck) {
      // NCCL's kernels would wait for the bytes that never come (or for room
      // that is never given), and NCCL would not know: held until the abort.
      std::unique_lock<std::mutex> lock(c->m);
      c->cv.wait(lock, [&] { return c->aborted.load(); });
      return;
    }
    if (all) return;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void run_part(void* data) {
  std::unique_ptr<part> p(static_cast<part*>(data));
  launch& l = *p->l;
  ncclComm_t c = l.comm;
  std::unique_lock<std::mutex> lock(c->m);
  ++l.arrived;
  c->cv.notify_all();
  if (!p->leader) {
    c->cv.wait(lock, [&] { return l.done || c->aborted.load(); });
    return;
  }
  c->cv.wait(lock,
             [&] { return (l.arrived == l.streams && c->finished == l.seq) || c->aborted.load(); });
  // Aborted: what waits for its turn ends at once (its stream goes on).
  if (!c->aborted.load()) {
    lock.unlock();
    execute(l);
    lock.lock();
  }
  if (c->finished == l.seq) ++c->finished;
  l.done = true;
  c->cv.notify_all();
}

ncclResult_t launch_group(std::vector<pending> ops) {
  // Per communicator, in the order of their first operation.
  std::vector<std::shared_ptr<launch>> launches;
  for (pending& p : ops) {
    std::shared_ptr<launch> l;
    for (auto& x : launches)
      if (x->comm == p.comm) l = x;
    if (!l) {
      l = std::make_shared<launch>();
      l->comm = p.comm;
      launches.push_back(l);
    }
    l->ops.push_back(p);
  }
  for (auto& l : launches) {
    std::vector<cudaStream_t> streams;
    for (const pending& p : l->ops) {
      bool known = false;
      for (cudaStream_t s : streams) known = known || s == p.stream;
      if (!known) streams.push_back(p.stream);
    }
    l->streams = streams.size();
    {
      std::lock_guard<std::mutex> lock(l->comm->m);
      l->seq = l->comm->issued++;
    }
    for (std::size_t i = 0; i < streams.size(); ++i)
      if (sluice_sim_stream_op(streams[i], run_part, new part{l, i == 0}) != cudaSuccess)
        return ncclUnhandledCudaError;
  }
  return ncclSuccess;
}

ncclResult_t add(const pending& p) {
  if (p.comm == nullptr) return ncclInvalidArgument;
  if (p.comm->aborted.load()) return ncclInvalidUsage;
  if (type_size(p.type) == 0) return ncclInvalidArgument;
  if ((p.k == kind::send || p.k == kind::recv || p.k == kind::broadcast) &&
      (p.peer < 0 || p.peer >= p.comm->size))
    return ncclInvalidArgument;
  if (group_depth > 0) {
    group_ops.push_back(p);
    return ncclSuccess;
  }
  return launch_group({p});
}

}  // namespace

extern "C" {

const char* ncclGetErrorString(ncclResult_t r) {
  switch (r) {
    case ncclSuccess: return "no error (simulated NCCL)";
    case ncclUnhandledCudaError: return "unhandled cuda error (simulated NCCL)";
    case ncclSystemError: return "unhandled system error (simulated NCCL)";
    case ncclInternalError: return "internal error (simulated NCCL)";
    case ncclInvalidArgument: return "invalid argument (simulated NCCL)";
    case ncclInvalidUsage: return "invalid usage (simulated NCCL)";
    case ncclRemoteError:
      return "remote process exited or there was a network error (simulated NCCL)";
    case ncclInProgress: return "NCCL operation in progress (simulated NCCL)";
    default: return "unknown result code (simulated NCCL)";
  }
}

ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return ncclInvalidArgument;
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId* id) {
  static std::atomic<int> seq{0};
  if (id == nullptr) return ncclInvalidArgument;
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  unique u{magic, world, seq.fetch_add(1)};
  std::memset(id, 0, sizeof *id);
  std::memcpy(id->internal, &u, sizeof u);
  return ncclSuccess;
}

// The members find one another through the id's maker over MPI_COMM_WORLD
// (tags from 30000), then make their own MPI communicator of the group.
ncclResult_t ncclCommInitRank(ncclComm_t* out, int nranks, ncclUniqueId id, int rank) {
  if (out == nullptr || nranks < 1 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_MULTIPLE) return ncclInvalidUsage;
  unique u{};
  std::memcpy(&u, id.internal, sizeof u);
  if (u.magic != magic) return ncclInvalidArgument;
  const int tag = 30000 + u.seq % 2000;
  int world = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world);
  const int me[2] = {rank, world};
  MPI_Request sent = MPI_REQUEST_NULL;
  MPI_Isend(me, 2, MPI_INT, u.root, tag, MPI_COMM_WORLD, &sent);
  std::vector<int> members(static_cast<std::size_t>(nranks), -1);
  if (world == u.root) {
    for (int i = 0; i < nranks; ++i) {
      int who[2] = {0, 0};
      MPI_Recv(who, 2, MPI_INT, MPI_ANY_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (who[0] >= 0 && who[0] < nranks) members[static_cast<std::size_t>(who[0])] = who[1];
    }
    std::vector<MPI_Request> told(static_cast<std::size_t>(nranks));
    for (int i = 0; i < nranks; ++i)
      MPI_Isend(members.data(), nranks, MPI_INT, members[static_cast<std::size_t>(i)], tag + 2000,
                MPI_COMM_WORLD, &told[static_cast<std::size_t>(i)]);
    MPI_Recv(members.data(), nranks, MPI_INT, u.root, tag + 2000, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    MPI_Waitall(nranks, told.data(), MPI_STATUSES_IGNORE);
  } else {
    MPI_Recv(members.data(), nranks, MPI_INT, u.root, tag + 2000, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
  }
  MPI_Wait(&sent, MPI_STATUS_IGNORE);
  for (int w : members)
    if (w < 0) return ncclInvalidUsage;
  MPI_Group all = MPI_GROUP_NULL;
  MPI_Group mine = MPI_GROUP_NULL;
  MPI_Comm_group(MPI_COMM_WORLD, &all);
  MPI_Group_incl(all, nranks, members.data(), &mine);
  auto c = std::make_unique<ncclComm>();
  const int code = MPI_Comm_create_group(MPI_COMM_WORLD, mine, tag, &c->mpi);
  MPI_Group_free(&mine);
  MPI_Group_free(&all);
  if (code != MPI_SUCCESS || c->mpi == MPI_COMM_NULL) return ncclSystemError;
  MPI_Comm_set_errhandler(c->mpi, MPI_ERRORS_RETURN);
  c->rank = rank;
  c->size = nranks;
  *out = c.release();
  return ncclSuccess;
}

ncclResult_t ncclCommAbort(ncclComm_t c) {
  if (c == nullptr) return ncclSuccess;
  {
    std::lock_guard<std::mutex> lock(c->m);
    c->aborted.store(true);
    int expected = ncclSuccess;
    c->async.compare_exchange_strong(expected, ncclInvalidUsage);
  }
  c->cv.notify_all();
  // Left allocated, MPI communicator included: operations that were waiting
  // still end on their streams' threads and may hold requests of it.
  return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t c) {
  if (c == nullptr) return ncclSuccess;
  {
    std::unique_lock<std::mutex> lock(c->m);
    c->cv.wait(lock, [&] { return c->finished == c->issued || c->aborted.load(); });
    if (c->aborted.load()) return ncclSuccess;  // as ncclCommAbort: left to the process
  }
  MPI_Comm_free(&c->mpi);
  delete c;
  return ncclSuccess;
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t c, ncclResult_t* state) {
  if (c == nullptr || state == nullptr) return ncclInvalidArgument;
  *state = static_cast<ncclResult_t>(c->async.load());
  return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t c, int* count) {
  if (c == nullptr || count == nullptr) return ncclInvalidArgument;
  *count = c->size;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(const ncclComm_t c, int* rank) {
  if (c == nullptr || rank == nullptr) return ncclInvalidArgument;
  *rank = c->rank;
  return ncclSuccess;
}

ncclResult_t ncclGroupStart() {
  ++group_depth;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd() {
  if (group_depth == 0) return ncclInvalidUsage;
  if (--group_depth > 0) return ncclSuccess;
  std::vector<pending> ops;
  ops.swap(group_ops);
  return ops.empty() ? ncclSuccess : launch_group(std::move(ops));
}

ncclResult_t ncclSend(const void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t c,
                      cudaStream_t s) {
  return add({kind::send, buf, nullptr, count, t, ncclSum, peer, c, s});
}

ncclResult_t ncclRecv(void* buf, size_t count, ncclDataType_t t, int peer, ncclComm_t c,
                      cudaStream_t s) {
  return add({kind::recv, nullptr, buf, count, t, ncclSum, peer, c, s});
}

ncclResult_t ncclAllReduce(const void* in, void* out, size_t count, ncclDataType_t t,
                           ncclRedOp_t op, ncclComm_t c, cudaStream_t s) {
  if (mpi_op(op) == MPI_OP_NULL || mpi_type(t) == MPI_DATATYPE_NULL) return ncclInvalidArgument;
  return add({kind::all_reduce, in, out, count, t, op, 0, c, s});
}

ncclResult_t ncclBroadcast(const void* in, void* out, size_t count, ncclDataType_t t, int root,
                           ncclComm_t c, cudaStream_t s) {
  if (mpi_type(t) == MPI_DATATYPE_NULL) return ncclInvalidArgument;
  return add({kind::broadcast, in, out, count, t, ncclSum, root, c, s});
}

ncclResult_t ncclAllGather(const void* in, void* out, size_t count, ncclDataType_t t, ncclComm_t c,
                           cudaStream_t s) {
  if (mpi_type(t) == MPI_DATATYPE_NULL) return ncclInvalidArgument;
  return add({kind::all_gather, in, out, count, t, ncclSum, 0, c, s});
}

}  // extern "C"
