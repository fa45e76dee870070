// sluice-comm-registered-<backend>: sluice::comm sends from and receives into a
// registered_host_memory range without staging it (docs/comm.md "Registered
// host memory"), 2 ranks or more, each exchanging with both ring neighbours:
//
//   1. registered: a send and a receive inside one registered range, in a
//      group: no staging lease may be taken (every engine: the mpi engine
//      stages no host memory, the nccl engine none inside a registration);
//   2. partly registered: a send whose buffer runs past the end of the range
//      counts as pageable: under the nccl engine it is staged (a lease), so
//      the counter is shown to count;
//   3. contrast: the same exchange from plain host memory (nccl: staged) and
//      from device memory (mpi on a GPU backend: staged).
//
// Every received byte is checked. Prints one line per case with its leases;
// exit 0 when every check held, 1 otherwise.
//
//   mpirun -np 2 sluice-comm-registered-<backend> [--engine=mpi|nccl|automatic]
#include <sluice/comm.hpp>
#include <sluice/sluice.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace sluice::comm::detail {
std::size_t staging_leases() noexcept;  // src/comm/impl/staging.cpp (not public API)
}  // namespace sluice::comm::detail

namespace {

namespace comm = sluice::comm;

constexpr std::size_t bytes = 64 * 1024;

unsigned char pattern(int rank, std::size_t i) {
  return static_cast<unsigned char>((i * 131 + static_cast<std::size_t>(rank) * 29 + 7) & 0xff);
}

struct exchange_result {
  std::size_t leases = 0;
  bool data_ok = false;
};

// One ring exchange: `out` to the next rank, `in` from the previous one, as a
// group on s; then the received bytes checked (read back through `check`,
// host memory, when `in` is device memory).
exchange_result exchange(sluice::stream& s, const comm::communicator& c, unsigned char* out,
                         unsigned char* in, bool device_memory) {
  const int next = (c.rank() + 1) % c.size();
  const int previous = (c.rank() + c.size() - 1) % c.size();
  std::vector<unsigned char> mine(bytes), got(bytes, 0);
  for (std::size_t i = 0; i < bytes; ++i) mine[i] = pattern(c.rank(), i);
  if (device_memory) {
    sluice::copy(s, out, mine.data(), bytes);
    sluice::fill(s, in, 0, bytes);
  } else {
    std::memcpy(out, mine.data(), bytes);
    std::memset(in, 0, bytes);
  }
  const std::size_t before = comm::detail::staging_leases();
  {
    comm::group g(c);
    comm::send(s, out, bytes, next, c);
    comm::recv(s, in, bytes, previous, c);
  }
  exchange_result r;
  r.leases = comm::detail::staging_leases() - before;
  if (device_memory) sluice::copy(s, got.data(), in, bytes);
  s.synchronize();
  const unsigned char* received = device_memory ? got.data() : in;
  r.data_ok = true;
  for (std::size_t i = 0; i < bytes; ++i)
    if (received[i] != pattern(previous, i)) {
      r.data_ok = false;
      break;
    }
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  comm::engine engine = comm::engine::automatic;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--engine=mpi") {
      engine = comm::engine::mpi;
    } else if (a == "--engine=nccl") {
      engine = comm::engine::nccl;
    } else if (a != "--engine=automatic") {
      if (rank == 0)
        std::fprintf(stderr, "usage: mpirun -np N %s [--engine=mpi|nccl|automatic]\n", argv[0]);
      MPI_Finalize();
      return 1;
    }
  }
  int failed = 0;
  {
    const sluice::device d(rank % sluice::device_count());
    comm::communicator c(MPI_COMM_WORLD, d, engine);
    const bool nccl = c.kind() == comm::engine::nccl;
    const bool gpu = sluice::backend() != sluice::backend_kind::host;
    sluice::stream s(d);
    auto report = [&](const char* what, const exchange_result& r, bool staged_expected,
                      bool check_staging) {
      const bool staging_ok = !check_staging || (r.leases > 0) == staged_expected;
      if (!r.data_ok || !staging_ok) failed = 1;
      if (rank == 0)
        std::printf("%-36s %zu staging leases (%s)%s%s\n", what, r.leases,
                    !check_staging    ? "not checked"
                    : staged_expected ? "staged, as it must be"
                                      : "not staged, as it must be",
                    r.data_ok ? "" : "; DATA WRONG", staging_ok ? "" : "; STAGING WRONG");
    };
    if (rank == 0)
      std::printf("sluice-comm-registered: backend %s, engine %s, %d ranks\n",
                  sluice::backend_name(), comm::to_string(c.kind()), c.size());

    // 1. Send and receive inside one registration (a page more than both).
    std::vector<unsigned char> memory(2 * bytes + 8192);
    {
      sluice::registered_host_memory registered(memory.data(), memory.size());
      report("registered send and receive:",
             exchange(s, c, memory.data(), memory.data() + bytes, false), false, true);
      // 2. The send's buffer runs half past the registration's end: pageable.
      std::vector<unsigned char> plain(2 * bytes);
      sluice::registered_host_memory half(plain.data(), bytes / 2);
      report("partly registered send:", exchange(s, c, plain.data(), memory.data() + bytes, false),
             nccl, true);
    }
    // 3. Unregistered host memory, then device memory.
    std::vector<unsigned char> plain(2 * bytes);
    report("plain host send and receive:",
           exchange(s, c, plain.data(), plain.data() + bytes, false), nccl, true);
    sluice::device_buffer<unsigned char> device_memory(d, 2 * bytes);
    report("device send and receive:",
           exchange(s, c, device_memory.data(), device_memory.data() + bytes, true), gpu && !nccl,
           true);
  }
  int any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  if (rank == 0) std::printf("result: %s\n", any == 0 ? "every check held" : "FAILED");
  MPI_Finalize();
  return any == 0 ? 0 : 1;
}
