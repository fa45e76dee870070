// The engines of the CUDA build with NCCL (cmake/SluiceComm.cmake: nccl.h and
// libnccl found): mpi and nccl; `automatic` picks nccl. A communicator's NCCL
// lanes: kept ones reused when every rank has them, else made (the
// ncclUniqueIds broadcast over MPI, ncclCommInitRank), and every peer
// connected before the constructor returns (docs/comm.md "The nccl engine").
#include "comm/engine_thread.hpp"
#include "comm/impl/communicator_state.hpp"
#include "comm/nccl/lane_pool.hpp"
#include "comm/nccl/lanes.hpp"
#include "comm/nccl/transport.hpp"
#include "settings.hpp"

#include <sluice/error.hpp>
#include <sluice/memory.hpp>
#include <sluice/native.hpp>
#include <sluice/stream.hpp>

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::comm::detail {

engine default_engine() noexcept { return engine::nccl; }
bool nccl_available() noexcept { return true; }

}  // namespace sluice::comm::detail

namespace sluice::comm::detail::nccl {

namespace {

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
    auto lock = engine_thread::mpi_guard();
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

void create_lanes(communicator_state& c) {
  // Rank 0 picks the lanes per kind: default_lanes, the declaration's
  // default, where unset; a bad value as 0, which every rank rejects after
  // the broadcast (none throws alone).
  int lanes_per = default_lanes;
  if (c.rank == 0) {
    try {
      lanes_per = sluice::detail::settings::comm_nccl_lanes();
    } catch (const sluice::error&) {
      lanes_per = 0;
    }
  }
  const std::vector<int> members = world_members(c.mpi, c.size);
  c.nccl_members = members;
  {
    auto lock = engine_thread::mpi_guard();
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
    auto lock = engine_thread::mpi_guard();
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
    auto lock = engine_thread::mpi_guard();
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
    auto lock = engine_thread::mpi_guard();
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
    // The helper stream of batches over several lanes (enqueue.cpp), at
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

}  // namespace sluice::comm::detail::nccl
