// sluice-comm-<backend>: the COMM family under an MPI launcher
//   mpirun -np N sluice-comm-host [--gtest_output=xml:F] [--markdown=F] [gtest flags]
// Every rank runs every test; CommTest::TearDown makes each test's verdict
// the job's, and rank 0 alone prints one verdict per rule (and writes the
// JUnit and Markdown files). MPI runs at MPI_THREAD_MULTIPLE: the tests' own
// MPI calls (barriers) run beside the engine thread. The watchdog names a
// test that hangs (exit 124). A GPU backend where a rank has no device of it
// (CI, the VM) runs nothing: rank 0 says so and every rank exits 77 (skipped).
#include "../conformance/watchdog.hpp"
#include "../family_report.hpp"
#include "comm_test.hpp"

#include <sluice/backend.hpp>
#include <sluice/device.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace sluice::conformance {

void world_barrier() { MPI_Barrier(MPI_COMM_WORLD); }

int comm_timeout_s() {
  const char* v = std::getenv("SLUICE_COMM_TIMEOUT_S");
  return v != nullptr && *v != '\0' ? std::atoi(v) : 300;
}

comm::engine test_engine() {
  static const comm::engine e = [] {
    const char* v = std::getenv("SLUICE_COMM_ENGINE");
    const std::string name = v != nullptr ? v : "";
    if (name.empty() || name == "automatic") return comm::engine::automatic;
    if (name == "mpi") return comm::engine::mpi;
    if (name == "nccl") return comm::engine::nccl;
    std::fprintf(stderr, "sluice-comm: SLUICE_COMM_ENGINE=%s is not mpi, nccl or automatic\n", v);
    std::exit(2);
  }();
  return e;
}

void CommTest::TearDown() {
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int failed = HasFailure() ? 1 : 0;
  std::vector<int> all(static_cast<std::size_t>(size), 0);
  MPI_Allgather(&failed, 1, MPI_INT, all.data(), 1, MPI_INT, MPI_COMM_WORLD);
  std::string others;
  for (int r = 0; r < size; ++r)
    if (r != rank && all[static_cast<std::size_t>(r)] != 0) others += " " + std::to_string(r);
  if (!others.empty() && !failed) ADD_FAILURE() << "failed on rank(s)" << others;
}

}  // namespace sluice::conformance

int main(int argc, char** argv) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0;
  int size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (provided < MPI_THREAD_MULTIPLE || size < 2) {
    if (rank == 0)
      std::fprintf(
          stderr,
          "sluice-comm: needs >= 2 ranks and MPI_THREAD_MULTIPLE (got %d ranks, level %d)\n", size,
          provided);
    MPI_Finalize();
    return 2;
  }
  // Every rank's answer: one rank without a device must not leave the others
  // waiting in the probe communicator's collective creation.
  int devices = sluice::backend() == sluice::backend_kind::host ? 1 : sluice::device_count();
  int fewest = devices;
  MPI_Allreduce(&devices, &fewest, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (fewest == 0) {
    if (rank == 0)
      std::printf("sluice-comm-%s: no %s device on %s rank: every COMM test needs one; none ran\n",
                  sluice::backend_name(),
                  sluice::backend() == sluice::backend_kind::cuda ? "CUDA" : "HIP",
                  devices == 0 ? "this" : "another");
    MPI_Finalize();
    return 77;
  }
  ::testing::InitGoogleTest(&argc, argv);
  auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
  if (rank != 0) {
    // Only rank 0 prints and writes the report; the others' failures reach it
    // through CommTest::TearDown and are printed here, prefixed by the rank.
    delete listeners.Release(listeners.default_result_printer());
    delete listeners.Release(listeners.default_xml_generator());
    struct rank_printer : ::testing::EmptyTestEventListener {
      int rank;
      explicit rank_printer(int r) : rank(r) {}
      void OnTestPartResult(const ::testing::TestPartResult& r) override {
        if (r.failed())
          std::fprintf(stderr, "[rank %d] %s:%d: %s\n", rank,
                       r.file_name() != nullptr ? r.file_name() : "?", r.line_number(),
                       r.summary());
      }
    };
    listeners.Append(new rank_printer(rank));
  }
  sluice::conformance::test_engine();  // a bad name stops every rank here
  {
    // Which engine the tests' communicators use (automatic: the build's pick).
    // Collective: every rank makes it.
    sluice::comm::communicator probe(MPI_COMM_WORLD, sluice::device(0),
                                     sluice::conformance::test_engine());
    if (rank == 0)
      std::printf(
          "sluice-comm: engine %s (SLUICE_COMM_ENGINE=%s)\n", sluice::comm::to_string(probe.kind()),
          std::getenv("SLUICE_COMM_ENGINE") != nullptr ? std::getenv("SLUICE_COMM_ENGINE") : "");
  }
  sluice::conformance::install_watchdog();
  int result = RUN_ALL_TESTS();
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    if (rank == 0) std::fprintf(stderr, "sluice-comm: no test ran\n");
    result = 1;
  }
  // One verdict per rule (rank 0's results are the job's: CommTest::TearDown).
  // With a filter (the mutation runs) only gtest's result counts.
  const std::vector<sluice::conformance::family_rule> rules = {
      {"COMM-1", "COMM_1__", "a send reads after the work before it; results visible after"},
      {"COMM-2", "COMM_2__", "every call returns without waiting for a peer"},
      {"COMM-3", "COMM_3__", "an operation waiting for its peer holds only its own stream"},
      {"COMM-4", "COMM_4__", "messages match in enqueue order; a group's exchange never deadlocks"},
      {"COMM-5", "COMM_5__", "collectives give every rank the same result; integers exact"},
      {"COMM-6", "COMM_6__", "bad input is rejected before anything is enqueued"},
      {"COMM-7", "COMM_7__", "a failed or silent peer is errc::comm_failure within the timeout"},
  };
  if (rank == 0 && ::testing::GTEST_FLAG(filter) == "*" &&
      sluice::conformance::report_family(std::string("sluice-comm-") + sluice::backend_name() +
                                             " (" + std::to_string(size) + " ranks)",
                                         rules,
                                         sluice::conformance::markdown_argument(argc, argv)) != 0)
    result = 1;
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
