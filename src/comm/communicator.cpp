// sluice::comm's communicator: made collectively over an MPI communicator
// (its duplicates, rank 0's settings, the trace clocks, the NCCL lanes of the
// nccl engine), and its lifetime's end.
#include "comm/checks.hpp"
#include "comm/engine_thread.hpp"
#include "comm/impl/communicator_state.hpp"
#include "comm/nccl/transport.hpp"
#include "comm/trace_clock.hpp"
#include "settings.hpp"

#include <sluice/backend.hpp>
#include <sluice/comm.hpp>
#include <sluice/error.hpp>
#include <sluice/trace.hpp>

#include <memory>
#include <string>
#include <utility>

namespace sluice::comm {

namespace detail {

namespace {

// A setting that every rank must agree on, as rank 0 reads it: the
// accessor's value, or -1 when it is not a valid one (rank 0 broadcasts it,
// and every rank rejects it then: none throws alone).
template <class Accessor>
long long rank0_setting(Accessor read) {
  try {
    return read();
  } catch (const sluice::error&) {
    return -1;
  }
}

// SLUICE_COMM_PIECE_BYTES: the bytes of a piece (docs/comm.md "Pieces"), 0 or
// 4096..1 GiB. Default: 4 MiB on the GPU backends (whose device buffers go
// through staging), 0 (none) on the host backend, where nothing is staged.
long long piece_bytes_asked() {
  const long long n = rank0_setting([] {
    return sluice::detail::settings::comm_piece_bytes(
        sluice::backend() == backend_kind::host ? 0 : 4 << 20);
  });
  return n > 0 && n < 4096 ? -1 : n;
}

}  // namespace

communicator_state::~communicator_state() {
  if (kind == engine::nccl) nccl::release_lanes(*this);
  int finalized = 1;
  MPI_Finalized(&finalized);
  if (mpi == MPI_COMM_NULL || finalized) return;
  auto free_both = [this] {
    MPI_Comm_free(&mpi);
    if (ring != MPI_COMM_NULL) MPI_Comm_free(&ring);
    if (pieces != MPI_COMM_NULL) MPI_Comm_free(&pieces);
  };
  if (engine_thread::on_engine_thread()) {  // it holds the MPI guard
    free_both();
    return;
  }
  auto lock = engine_thread::mpi_guard();
  free_both();
}

}  // namespace detail

communicator::communicator(MPI_Comm c, sluice::device d, engine e) {
  constexpr const char* api = "sluice::comm::communicator";
  if (e != engine::automatic && e != engine::mpi && e != engine::nccl)
    detail::reject(errc::invalid_argument, api, "unknown engine");
  int initialized = 0;
  int finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    detail::reject(errc::invalid_argument, api,
                   finalized ? "MPI is finalized" : "MPI is not initialized (call MPI_Init first)");
  if (c == MPI_COMM_NULL)
    detail::reject(errc::invalid_argument, api, "the MPI communicator is MPI_COMM_NULL");
  const engine chosen = e == engine::automatic ? detail::default_engine() : e;
  if (chosen == engine::nccl && !detail::nccl_available())
    detail::reject(errc::not_supported, api,
                   "the nccl engine is not in this build (NCCL needs the CUDA backend and nccl.h; "
                   "engine::mpi works everywhere)");
  auto state = std::make_shared<detail::communicator_state>(d);
  state->kind = chosen;
  detail::engine_thread::get();  // the engine thread, before the collective dup below
  {
    auto lock = detail::engine_thread::mpi_guard();
    int inter = 0;
    MPI_Comm_test_inter(c, &inter);
    if (inter) detail::reject(errc::invalid_argument, api, "inter-communicators are not supported");
    if (MPI_Comm_dup(c, &state->mpi) != MPI_SUCCESS)
      detail::reject(errc::comm_failure, api, "MPI_Comm_dup failed");
    MPI_Comm_set_errhandler(state->mpi, MPI_ERRORS_RETURN);
    if (MPI_Comm_dup(state->mpi, &state->ring) != MPI_SUCCESS) {
      MPI_Comm_free(&state->mpi);  // here: the state's destructor would take the MPI guard
      detail::reject(errc::comm_failure, api, "MPI_Comm_dup failed (the ring's communicator)");
    }
    MPI_Comm_set_errhandler(state->ring, MPI_ERRORS_RETURN);
    if (MPI_Comm_dup(state->mpi, &state->pieces) != MPI_SUCCESS) {
      MPI_Comm_free(&state->ring);
      MPI_Comm_free(&state->mpi);
      detail::reject(errc::comm_failure, api, "MPI_Comm_dup failed (the pieces' communicator)");
    }
    MPI_Comm_set_errhandler(state->pieces, MPI_ERRORS_RETURN);
    MPI_Comm_rank(state->mpi, &state->rank);
    MPI_Comm_size(state->mpi, &state->size);
    void* value = nullptr;
    int present = 0;
    MPI_Comm_get_attr(state->mpi, MPI_TAG_UB, &value, &present);
    if (present && value != nullptr) state->tag_limit = *static_cast<int*>(value);
    // Whether this rank's node holds every rank (one that cannot tell says
    // no: the maximum below makes every rank agree).
    int node_size = 0;
    MPI_Comm node = MPI_COMM_NULL;
    if (MPI_Comm_split_type(state->mpi, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node) ==
        MPI_SUCCESS) {
      MPI_Comm_size(node, &node_size);
      MPI_Comm_free(&node);
    }
    // Whether any rank traces (then all measure the trace clocks together),
    // and whether any rank's node lacks a rank.
    int any[2] = {sluice::tracing() ? 1 : 0, node_size == state->size ? 0 : 1};
    if (MPI_Allreduce(MPI_IN_PLACE, any, 2, MPI_INT, MPI_MAX, state->mpi) != MPI_SUCCESS)
      detail::reject(errc::comm_failure, api, "MPI_Allreduce failed");
    state->one_node = any[1] == 0;
    if (any[0] != 0) detail::measure_trace_clock(*state);
    // Rank 0's piece size and pieces in flight, so that every rank cuts a
    // message the same way (mpi engine only: NCCL reads device memory,
    // nothing is staged).
    const bool asks = chosen == engine::mpi && state->rank == 0;
    long long piece[2] = {
        asks ? detail::piece_bytes_asked() : 0,
        asks ? detail::rank0_setting(sluice::detail::settings::comm_pieces_in_flight) : 0};
    if (MPI_Bcast(piece, 2, MPI_LONG_LONG, 0, state->mpi) != MPI_SUCCESS)
      detail::reject(errc::comm_failure, api, "MPI_Bcast failed (the piece size)");
    if (piece[0] < 0)
      detail::reject(errc::invalid_argument, api,
                     "SLUICE_COMM_PIECE_BYTES (rank 0's) must be 0 or a whole number from 4096 "
                     "to 1073741824");
    if (piece[1] < 0)
      detail::reject(errc::invalid_argument, api,
                     "SLUICE_COMM_PIECES_IN_FLIGHT (rank 0's) must be a whole number from 0 "
                     "(all) to 1024");
    state->piece_bytes = static_cast<std::size_t>(piece[0]);
    state->pieces_in_flight = static_cast<std::size_t>(piece[1]);
  }
  if (chosen == engine::nccl) detail::nccl::create_lanes(*state);  // collective, like the dup
  state->sent.assign(static_cast<std::size_t>(state->size), 0);
  state->received.assign(static_cast<std::size_t>(state->size), 0);
  state->lost.assign(static_cast<std::size_t>(state->size), 0);
  state_ = std::move(state);
}

communicator::communicator(communicator&&) noexcept = default;
communicator& communicator::operator=(communicator&&) noexcept = default;
communicator::~communicator() = default;

int communicator::rank() const {
  return detail::checked(state_, "sluice::comm::communicator::rank").rank;
}
int communicator::size() const {
  return detail::checked(state_, "sluice::comm::communicator::size").size;
}
sluice::device communicator::device() const {
  return detail::checked(state_, "sluice::comm::communicator::device").device;
}
engine communicator::kind() const {
  return detail::checked(state_, "sluice::comm::communicator::kind").kind;
}

}  // namespace sluice::comm
