// sluice-comm-fault-<backend>: two ranks exchange messages through
// sluice::comm until a fault injected from outside ends the exchange, or until
// they are told to stop; run by tests/multihost/fault (docs/comm.md "After a
// failure"). Every exchange's data is checked when it completes (nothing
// lost). Rank r on host h<r>.
//   sluice-comm-fault-host --dir=D [--bytes=N] [--end=abort|finalize]
// Each rank writes D/rank<r>.ready after 20 checked exchanges; rank 0 stops
// after the exchange in which it sees D/stop (its first word tells rank 1),
// then both print what they checked and end normally (exit 0). On
// errc::comm_failure a rank prints when it came (system clock, ns: the driver
// compares it with the fault's time), shows that another stream of its device
// still completes work and that a later send to its peer is refused at
// enqueue, writes its state (D/rank<r>.state) and ends with MPI_Abort (or,
// --end=finalize, MPI_Finalize, reporting whether it returned). Output lines
// the driver reads start with "rank <r>:"; a data check that fails prints
// "BAD" and the rank exits 1.
#include <sluice/comm.hpp>
#include <sluice/sluice.hpp>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

long long wall_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

bool exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

void write_file(const std::string& path, const std::string& text) {
  if (FILE* f = std::fopen(path.c_str(), "w")) {
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
}

// Word i of exchange n from rank r (word 0 carries "go on": not part of it).
std::uint32_t word(int r, std::uint64_t n, std::size_t i) {
  return static_cast<std::uint32_t>((n * 2654435761ULL) ^ (static_cast<std::uint64_t>(r) << 28) ^
                                    (i * 40503U));
}

std::string option(int argc, char** argv, const char* name, const char* fallback) {
  const std::string prefix = std::string("--") + name + "=";
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], prefix.c_str(), prefix.size()) == 0) return argv[i] + prefix.size();
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const std::string dir = option(argc, argv, "dir", ".");
  const std::size_t words = std::stoul(option(argc, argv, "bytes", "262144")) / 4;
  const std::string end = option(argc, argv, "end", "abort");
  if (size != 2 || words < 2 || (end != "abort" && end != "finalize")) {
    if (rank == 0)
      std::fprintf(stderr, "sluice-comm-fault: 2 ranks, --bytes >= 8, --end=abort|finalize\n");
    MPI_Finalize();
    return 2;
  }
  const int peer = 1 - rank;
  int code = 0;
  {
    const sluice::device d(0);
    sluice::comm::communicator c(MPI_COMM_WORLD, d);
    sluice::stream s(d), other(d);
    std::vector<std::uint32_t> out(words), in(words);
    std::uint64_t checked = 0;  // exchanges whose data was checked
    bool bad = false, last = false;
    double slowest_ms = 0;
    std::uint64_t n = 0;
    for (;; ++n) {
      // Written before the exchange is enqueued, checked once synchronize()
      // returned (its data visible then): what is checked is what it carried.
      out[0] = rank == 0 ? (exists(dir + "/stop") ? 0U : 1U) : 1U;
      for (std::size_t i = 1; i < words; ++i) out[i] = word(rank, n, i);
      std::fill(in.begin(), in.end(), 0U);
      {
        sluice::comm::group g(c);
        sluice::comm::send(s, out.data(), words * 4, peer, c);
        sluice::comm::recv(s, in.data(), words * 4, peer, c);
      }
      const auto began = clock_type::now();
      try {
        s.synchronize();
      } catch (const sluice::error& e) {
        const long long at = wall_ns();
        if (e.code() != sluice::errc::comm_failure) throw;
        std::printf("rank %d: comm_failure at %lld ns, after %llu exchanges checked: %s\n", rank,
                    at, static_cast<unsigned long long>(checked), e.what());
        bool ran = false;
        other.host_func([&] { ran = true; });
        other.synchronize();
        std::printf("rank %d: another stream %s work after the failure\n", rank,
                    ran ? "completed" : "did not complete");
        const auto refused_at = clock_type::now();
        try {
          sluice::comm::send(s, out.data(), words * 4, peer, c);
          std::printf("rank %d: FAIL: a later send to rank %d was enqueued\n", rank, peer);
        } catch (const sluice::error& later) {
          std::printf("rank %d: a later send was refused at enqueue (%s) in %lld us\n", rank,
                      sluice::to_string(later.code()),
                      static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(
                                                 clock_type::now() - refused_at)
                                                 .count()));
        }
        write_file(dir + "/rank" + std::to_string(rank) + ".state",
                   "exchanges checked: " + std::to_string(checked) + "\n");
        std::printf("rank %d: wrote its state; ending with %s\n", rank,
                    end == "abort" ? "MPI_Abort" : "MPI_Finalize");
        std::fflush(stdout);
        write_file(dir + "/rank" + std::to_string(rank) + ".failed", "");
        if (end == "abort") MPI_Abort(MPI_COMM_WORLD, 3);
        code = 3;
        break;
      }
      slowest_ms = std::max(
          slowest_ms, std::chrono::duration<double, std::milli>(clock_type::now() - began).count());
      for (std::size_t i = 1; i < words && !bad; ++i)
        if (in[i] != word(peer, n, i)) {
          std::printf("rank %d: BAD: exchange %llu, word %zu: %u, not %u\n", rank,
                      static_cast<unsigned long long>(n), i, in[i], word(peer, n, i));
          bad = true;
        }
      if (bad) {
        code = 1;
        break;
      }
      ++checked;
      last = (rank == 0 ? out[0] : in[0]) == 0U;
      if (checked == 20) write_file(dir + "/rank" + std::to_string(rank) + ".ready", "");
      if (last) break;
    }
    if (code == 0)
      std::printf("rank %d: %llu exchanges of %zu bytes checked, the slowest %.0f ms\n", rank,
                  static_cast<unsigned long long>(checked), words * 4, slowest_ms);
    std::fflush(stdout);
  }
  MPI_Finalize();
  if (code == 3) std::printf("rank %d: MPI_Finalize returned after the failure\n", rank);
  return code;
}
