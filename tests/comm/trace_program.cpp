// sluice-comm-trace-<backend>: a small exchange for the comm tracing test
// (trace_check.cmake runs it under mpirun with SLUICE_TRACE set). Two ranks:
// a send (rank 0) and its receive (rank 1), a group exchange, all_reduce,
// broadcast and all_gather on one stream, while another stream computes.
// The send and the receive use device buffers (staged on the GPU backends).
// Checks the data; the trace files are checked by the script.
#include <sluice/comm.hpp>
#include <sluice/sluice.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failed = 0;
  {
    const sluice::device d(rank % sluice::device_count());  // one device per rank (NCCL needs it)
    // SLUICE_COMM_ENGINE=mpi|nccl picks the engine (as for the COMM suite).
    const char* asked = std::getenv("SLUICE_COMM_ENGINE");
    const std::string engine_name = asked != nullptr ? asked : "";
    const auto engine = engine_name == "mpi"    ? sluice::comm::engine::mpi
                        : engine_name == "nccl" ? sluice::comm::engine::nccl
                                                : sluice::comm::engine::automatic;
    sluice::comm::communicator c(MPI_COMM_WORLD, d, engine);
    sluice::stream_options named;
    named.name = "halo";
    sluice::stream halo(d, named);
    named.name = "compute";
    sluice::stream compute(d, named);
    const int peer = (rank + 1) % size;
    const int from = (rank + size - 1) % size;
    // The send and the receive in device memory: on the GPU backends staged
    // through pinned memory (copies beside the span), on the host backend not.
    std::vector<char> out(4096, static_cast<char>(rank)), in(4096, -1);
    sluice::device_buffer<char> device_out(halo, out.size()), device_in(halo, in.size());
    sluice::copy(halo, device_out.data(), out.data(), out.size());
    if (rank == 0) sluice::comm::send(halo, device_out.data(), out.size(), 1, c);
    if (rank == 1) {
      sluice::comm::recv(halo, device_in.data(), in.size(), 0, c);
      sluice::copy(halo, in.data(), device_in.data(), in.size());
    }
    std::vector<int> ring_out(256, rank), ring_in(256, -1);
    {
      sluice::comm::group g(c);
      sluice::comm::send(halo, ring_out.data(), ring_out.size() * sizeof(int), peer, c);
      sluice::comm::recv(halo, ring_in.data(), ring_in.size() * sizeof(int), from, c);
    }
    // Work on another stream meanwhile: the report's overlap.
    volatile double sink = 0;
    compute.host_func([&sink] {
      for (int i = 0; i < 2000000; ++i) sink = sink + i * 0.5;
    });
    double sum = rank + 1.0;
    sluice::comm::all_reduce(halo, &sum, &sum, 1, sluice::comm::reduce_op::sum, c);
    std::vector<int> root(64, rank == 0 ? 7 : 0);
    sluice::comm::broadcast(halo, root.data(), root.size(), 0, c);
    std::vector<int> gathered(static_cast<std::size_t>(size), -1);
    const int mine = rank * 10;
    sluice::comm::all_gather(halo, &mine, gathered.data(), 1, c);
    halo.synchronize();
    compute.synchronize();
    if (rank == 1 && in[0] != 0) failed = 1;
    if (ring_in[0] != from) failed = 1;
    if (sum != size * (size + 1) / 2.0) failed = 1;
    if (root[63] != 7) failed = 1;
    for (int r = 0; r < size; ++r)
      if (gathered[static_cast<std::size_t>(r)] != r * 10) failed = 1;
    std::printf("rank %d: %s\n", rank, failed ? "wrong data" : "data right");
  }
  MPI_Finalize();
  return failed;
}
