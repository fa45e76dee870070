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

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace sluice::comm::detail {

engine default_engine() noexcept { return engine::nccl; }
bool nccl_available() noexcept { return true; }

namespace {

constexpr const char* api = "sluice::comm::communicator";

// The lanes: NCCL runs the operations of one NCCL communicator one after
// another in enqueue order, whatever their streams, so one NCCL communicator
// would let an operation that waits for its peer hold every later one of the
// sluice communicator (COMM-3) and make a send wait for receives enqueued
// before it in the other direction. A sluice communicator therefore has 3K
// NCCL communicators (K = SLUICE_COMM_NCCL_LANES, rank 0's, default 2): K for
// collectives, the n-th collective on lane (n - 1) mod K; and for each of the
// two directions (a send from the lower rank to the higher, or the other
// way) K for point-to-point, the n-th message from a to b on lane n mod K of
// that direction, where a's n-th send to b and b's n-th receive from a meet
// (COMM-4). Operations hold each other only on one lane: a collective the
// K-th after a waiting one, a message the K-th after a waiting one between
// the same two ranks, and messages of other pairs in the same direction and
// lane (docs/comm.md "The nccl engine").
constexpr int default_lanes = 2;
constexpr int max_lanes = 16;

std::size_t lanes_per_kind(const communicator_state& c) { return c.nccl.size() / 3; }

ncclComm_t collective_lane(const communicator_state& c, std::uint64_t collective) {
  return static_cast<ncclComm_t>(c.nccl[(collective - 1) % lanes_per_kind(c)]);
}

// The lane of a send from `from` to `to`, the sequence-th between them.
std::size_t p2p_lane(std::size_t k, int from, int to, std::uint64_t sequence) {
  return k + 2 * static_cast<std::size_t>(sequence % k) + (from < to ? 0 : 1);
}

ncclComm_t message_lane(const communicator_state& c, const message& m) {
  const std::size_t k = lanes_per_kind(c);
  const std::size_t lane = m.kind == op_kind::send ? p2p_lane(k, c.rank, m.peer, m.sequence)
                                                   : p2p_lane(k, m.peer, c.rank, m.sequence);
  return static_cast<ncclComm_t>(c.nccl[lane]);
}

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

// One NCCL group of 1-byte messages on every point-to-point lane, in its
// direction, with every peer, waited for: NCCL connects peers on their first
// send or receive, and that connection waits for the peer; made here (the
// constructor is collective) so that no later enqueue waits for a peer
// (COMM-2).
void connect_peers(communicator_state& c) {
  if (c.size < 2) return;
  const std::size_t k = lanes_per_kind(c);
  // sluice's own stream and memory: a vendor stream made here could wait for
  // the device's held streams (CUDA synchronizes at stream creation past a
  // number of live streams).
  sluice::stream s(c.device);
  sluice::device_buffer<unsigned char> scratch(c.device, static_cast<std::size_t>(2 * c.size));
  cudaStream_t stream = native_handle(s);
  unsigned char* base = scratch.data();
  ncclResult_t r = ncclGroupStart();
  for (std::size_t lane = k; lane < 3 * k && r == ncclSuccess; ++lane) {
    const bool upward = (lane - k) % 2 == 0;  // this lane's sends go from lower to higher ranks
    auto comm = static_cast<ncclComm_t>(c.nccl[lane]);
    for (int p = 0; p < c.size && r == ncclSuccess; ++p) {
      if (p == c.rank) continue;
      if ((c.rank < p) == upward)
        r = ncclSend(base + p, 1, ncclUint8, p, comm, stream);
      else
        r = ncclRecv(base + c.size + p, 1, ncclUint8, p, comm, stream);
    }
  }
  const ncclResult_t end = ncclGroupEnd();
  if (r == ncclSuccess) r = end;
  if (r != ncclSuccess) fail("connecting the peers failed: " + nccl_text(r), "ncclSend");
  s.synchronize();
}

}  // namespace

namespace {

// ncclCommAbort and ncclCommDestroy may wait for device work: the
// communicator's own (a receive's gate, stored by the engine) and, through
// cudaFree, any stream of the device, which a caller may hold (COMM-6's cases
// destroy a communicator while a stream waits for the test). They run on a
// thread of their own, so that destroying a communicator does not wait (the
// contract) and the engine goes on finishing what an abort ends.
// Detached, and counted: MPI_Finalize (nccl_settle) waits for them, so that
// no NCCL call is still running when the process ends.
struct pending_calls {
  std::mutex m;
  std::condition_variable cv;
  int running = 0;
};
pending_calls& pending() {
  static auto* p = new pending_calls;  // never destroyed: detached threads use it
  return *p;
}

// One thread per lane: an abort or destroy may wait for the whole device
// (cudaFree), whose kernels of another lane end only when that lane is
// aborted too (one thread for all lanes deadlocked there on 2x H100).
void off_thread(std::vector<void*> lanes, ncclResult_t (*call)(ncclComm_t)) noexcept {
  for (void* lane : lanes) {
    auto comm = static_cast<ncclComm_t>(lane);
    try {
      {
        std::lock_guard<std::mutex> lock(pending().m);
        ++pending().running;
      }
      std::thread([comm, call] {
        call(comm);
        std::lock_guard<std::mutex> lock(pending().m);
        --pending().running;
        pending().cv.notify_all();
      }).detach();
    } catch (...) {
      {
        std::lock_guard<std::mutex> lock(pending().m);
        --pending().running;
      }
      call(comm);  // no thread: here, as the last resort
    }
  }
}

}  // namespace

namespace {

// Lane sets of destroyed communicators, kept for the next communicator of
// the same ranks on the same device: ncclCommDestroy may wait for the whole
// device (cudaFree), so a destroy while the program holds a stream waits
// until the stream is released, and a new ncclCommInitRank meanwhile waits
// behind it (COMM-6's moved-from cases hung so on 2x H100:
// docs/results/runs/2026-11-26-comm-bench-2xh100.md). Reused,
// a set also spares its 3K ncclCommInitRank. Destroyed at MPI_Finalize
// (nccl_settle), or when more than `pool_per_key` wait for one key.
struct lane_set {
  std::uint64_t id = 0;
  int device = -1;
  std::vector<int> members;  // MPI_COMM_WORLD ranks, in the communicator's order
  std::vector<void*> lanes;
  std::unique_ptr<sluice::stream> helper;
  // Every message and collective of its last communicator, for the check
  // that none is left unmatched before the set is used again.
  std::vector<std::uint64_t> sent, received;
  std::uint64_t collectives = 0;
};
constexpr std::size_t pool_per_key = 4;
constexpr int candidates = 4;

struct lane_pool {
  std::mutex m;
  std::vector<lane_set> sets;
  std::uint64_t next_id = 1;
};
lane_pool& pool() {
  static auto* p = new lane_pool;  // never destroyed: nccl_settle empties it
  return *p;
}

std::vector<int> world_members(MPI_Comm comm, int size) {
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  std::vector<int> mine(static_cast<std::size_t>(size)), theirs(static_cast<std::size_t>(size));
  for (int i = 0; i < size; ++i) mine[static_cast<std::size_t>(i)] = i;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  MPI_Group_translate_ranks(group, size, mine.data(), world, theirs.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  return theirs;
}

bool same_key(const lane_set& x, int device, const std::vector<int>& members, std::size_t lanes) {
  return x.device == device && x.members == members && x.lanes.size() == lanes;
}

// A set kept for reuse takes every rank's word that its last communicator
// left no message unmatched: rank a's sends to b = b's receives from a, and
// the same collectives everywhere (else a stale message would meet the next
// communicator's first receive).
bool clean_everywhere(const lane_set& set, communicator_state& c) {
  const auto n = static_cast<std::size_t>(c.size);
  std::vector<std::uint64_t> row(2 * n + 1, 0), all((2 * n + 1) * n, 0);
  for (std::size_t p = 0; p < n && p < set.sent.size(); ++p) {
    row[p] = set.sent[p];
    row[n + p] = set.received[p];
  }
  row[2 * n] = set.collectives;
  {
    auto lock = progress::mpi_guard();
    if (MPI_Allgather(row.data(), static_cast<int>(row.size()), MPI_UINT64_T, all.data(),
                      static_cast<int>(row.size()), MPI_UINT64_T, c.mpi) != MPI_SUCCESS)
      fail("exchanging the NCCL lanes' message counts failed", "MPI_Allgather");
  }
  auto at = [&](std::size_t rank, std::size_t i) { return all[rank * (2 * n + 1) + i]; };
  for (std::size_t a = 0; a < n; ++a) {
    if (at(a, 2 * n) != at(0, 2 * n)) return false;
    for (std::size_t b = 0; b < n; ++b)
      if (a != b && at(a, b) != at(b, n + a)) return false;
  }
  return true;
}

}  // namespace

void nccl_create(communicator_state& c) {
  // Rank 0 picks the lanes per kind.
  int lanes_per = default_lanes;
  if (c.rank == 0) {
    if (const char* v = std::getenv("SLUICE_COMM_NCCL_LANES"); v != nullptr && *v != '\0') {
      char* end = nullptr;
      const long n = std::strtol(v, &end, 10);
      lanes_per = (*end == '\0' && n >= 1 && n <= max_lanes) ? static_cast<int>(n) : 0;
    }
  }
  const std::vector<int> members = world_members(c.mpi, c.size);
  c.nccl_members = members;
  {
    auto lock = progress::mpi_guard();
    if (MPI_Bcast(&lanes_per, 1, MPI_INT, 0, c.mpi) != MPI_SUCCESS)
      fail("broadcasting the NCCL lanes failed", "MPI_Bcast");
  }
  if (lanes_per == 0)
    throw error(errc::invalid_argument,
                std::string(api) + ": SLUICE_COMM_NCCL_LANES must be a whole number from 1 to " +
                    std::to_string(max_lanes) + " (rank 0's)",
                0, "getenv");
  const auto lanes = static_cast<std::size_t>(3 * lanes_per);
  // A kept set that every rank has (the smallest id of those).
  std::uint64_t mine[candidates] = {};
  {
    std::lock_guard<std::mutex> lock(pool().m);
    int k = 0;
    for (const lane_set& x : pool().sets)
      if (k < candidates && same_key(x, c.device.id(), members, lanes)) mine[k++] = x.id;
  }
  std::vector<std::uint64_t> everyone(static_cast<std::size_t>(candidates * c.size));
  {
    auto lock = progress::mpi_guard();
    if (MPI_Allgather(mine, candidates, MPI_UINT64_T, everyone.data(), candidates, MPI_UINT64_T,
                      c.mpi) != MPI_SUCCESS)
      fail("exchanging the kept NCCL lanes failed", "MPI_Allgather");
  }
  std::uint64_t chosen = 0;
  for (std::uint64_t id : mine) {
    if (id == 0 || (chosen != 0 && id >= chosen)) continue;
    bool everywhere = true;
    for (int r = 0; r < c.size && everywhere; ++r)
      everywhere =
          std::find(everyone.begin() + r * candidates, everyone.begin() + (r + 1) * candidates,
                    id) != everyone.begin() + (r + 1) * candidates;
    if (everywhere) chosen = id;
  }
  {  // every rank picks the same: the smallest id in every row
    std::uint64_t lowest = chosen == 0 ? UINT64_MAX : chosen;
    auto lock = progress::mpi_guard();
    if (MPI_Allreduce(MPI_IN_PLACE, &lowest, 1, MPI_UINT64_T, MPI_MIN, c.mpi) != MPI_SUCCESS)
      fail("agreeing on kept NCCL lanes failed", "MPI_Allreduce");
    chosen = lowest == UINT64_MAX ? 0 : lowest;
  }
  if (chosen != 0) {
    lane_set set;
    {
      std::lock_guard<std::mutex> lock(pool().m);
      auto it = std::find_if(pool().sets.begin(), pool().sets.end(),
                             [&](const lane_set& x) { return x.id == chosen; });
      set = std::move(*it);
      pool().sets.erase(it);
    }
    if (clean_everywhere(set, c)) {
      c.nccl = std::move(set.lanes);
      c.nccl_helper = std::move(set.helper);
      c.nccl_set = set.id;
      return;
    }
    off_thread(std::move(set.lanes), ncclCommDestroy);  // a message left unmatched somewhere
  }
  // New lanes: rank 0 makes their ids; every rank learns whether it got them
  // before anyone waits in ncclCommInitRank for one.
  std::vector<ncclUniqueId> ids(lanes);
  std::uint64_t setup[2] = {1, 0};  // ok, the set's id
  if (c.rank == 0) {
    for (auto& id : ids)
      if (ncclGetUniqueId(&id) != ncclSuccess) setup[0] = 0;
    std::lock_guard<std::mutex> lock(pool().m);
    setup[1] = pool().next_id++;
  }
  {
    auto lock = progress::mpi_guard();
    if (MPI_Bcast(setup, 2, MPI_UINT64_T, 0, c.mpi) != MPI_SUCCESS ||
        (setup[0] && MPI_Bcast(ids.data(), static_cast<int>(lanes * sizeof(ncclUniqueId)), MPI_BYTE,
                               0, c.mpi) != MPI_SUCCESS))
      fail("broadcasting the ncclUniqueIds failed", "MPI_Bcast");
  }
  if (!setup[0]) fail("ncclGetUniqueId failed on rank 0", "ncclGetUniqueId");
  c.nccl_set = setup[1];
  {  // ids from another rank 0 (another group) never meet this one's
    std::lock_guard<std::mutex> lock(pool().m);
    pool().next_id = std::max(pool().next_id, setup[1] + 1);
  }
  // Every connection made now, none at an enqueue (COMM-2): NCCL's collective
  // connections at init (unless the program set NCCL_RUNTIME_CONNECT), the
  // peers' below.
  setenv("NCCL_RUNTIME_CONNECT", "0", 0);
  const on_device on(c.device.id());
  for (std::size_t i = 0; i < lanes; ++i) {
    ncclComm_t comm = nullptr;
    const ncclResult_t r = ncclCommInitRank(&comm, c.size, ids[i], c.rank);
    if (r != ncclSuccess) {
      off_thread(std::move(c.nccl), ncclCommDestroy);
      c.nccl.clear();
      fail("ncclCommInitRank failed: " + nccl_text(r), "ncclCommInitRank");
    }
    c.nccl.push_back(comm);
  }
  try {
    connect_peers(c);
    // The helper stream of batches over several lanes (nccl_enqueue), at
    // the device's highest priority: it carries messages of streams of any.
    stream_options o;
    o.priority = priority::high;
    o.name = "sluice::comm nccl lanes";
    c.nccl_helper = std::make_unique<sluice::stream>(c.device, o);
  } catch (...) {
    off_thread(std::move(c.nccl), ncclCommDestroy);
    c.nccl.clear();
    throw;
  }
}

void nccl_enqueue(batch& b) noexcept {
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

std::string nccl_async_error(communicator_state& c) noexcept {
  // Only the engine thread (nccl_abort) empties c.nccl, and this is the engine's.
  for (void* lane : c.nccl) {
    ncclResult_t state = ncclSuccess;
    const ncclResult_t r = ncclCommGetAsyncError(static_cast<ncclComm_t>(lane), &state);
    if (r != ncclSuccess) return "ncclCommGetAsyncError failed: " + nccl_text(r);
    if (state != ncclSuccess && state != ncclInProgress)
      return "ncclCommGetAsyncError: " + nccl_text(state);
  }
  return {};
}

bool nccl_settle(std::chrono::seconds patience) noexcept {
  try {
    std::vector<lane_set> kept;
    {
      std::lock_guard<std::mutex> lock(pool().m);
      kept.swap(pool().sets);
    }
    for (lane_set& set : kept) off_thread(std::move(set.lanes), ncclCommDestroy);
    std::unique_lock<std::mutex> lock(pending().m);
    return pending().cv.wait_for(lock, patience, [] { return pending().running == 0; });
  } catch (...) {
    return false;
  }
}

void nccl_abort(communicator_state& c, const std::string& why) noexcept {
  std::vector<void*> lanes;
  try {
    std::lock_guard<std::mutex> lock(c.m);  // no enqueue calls NCCL meanwhile
    if (c.nccl.empty()) return;
    lanes.swap(c.nccl);  // later operations of c fail at once
    c.nccl_failure = why;
  } catch (...) {
    return;  // No lock: nothing to do but leave the communicator as it is.
  }
  off_thread(std::move(lanes), ncclCommAbort);
}

void nccl_destroy(communicator_state& c) noexcept {
  if (c.nccl.empty()) return;  // none, or aborted
  // Every operation of c is done: each batch held c until its done flags.
  // Kept for the next communicator of these ranks (lane_set), not destroyed.
  try {
    lane_set set;
    set.id = c.nccl_set;
    set.device = c.device.id();
    set.members = c.nccl_members;
    set.lanes = c.nccl;
    set.helper = std::move(c.nccl_helper);
    set.sent = c.sent;
    set.received = c.received;
    set.collectives = c.collectives;
    c.nccl.clear();
    std::vector<void*> surplus;
    {
      std::lock_guard<std::mutex> lock(pool().m);
      std::size_t same = 0;
      for (const lane_set& x : pool().sets)
        if (same_key(x, set.device, set.members, set.lanes.size())) ++same;
      if (same >= pool_per_key)
        surplus = std::move(set.lanes);
      else
        pool().sets.push_back(std::move(set));
    }
    if (!surplus.empty()) off_thread(std::move(surplus), ncclCommDestroy);
  } catch (...) {
    off_thread(std::move(c.nccl), ncclCommDestroy);
    c.nccl.clear();
  }
}

}  // namespace sluice::comm::detail
