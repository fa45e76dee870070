// sluice-comm-<backend>: the COMM family under an MPI launcher
//   mpirun -np N sluice-comm-host [--gtest_output=xml:F] [gtest flags]
// Every rank runs every test; CommTest::TearDown makes each test's verdict
// the job's, and rank 0 alone prints (and writes the JUnit file). MPI runs at
// MPI_THREAD_MULTIPLE: the tests' own MPI calls (barriers) run beside the
// engine thread. The watchdog names a test that hangs (exit 124).
#include "comm_test.hpp"

#include "../conformance/watchdog.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace sluice::conformance {

void world_barrier() { MPI_Barrier(MPI_COMM_WORLD); }

int comm_timeout_s() {
  const char* v = std::getenv("SLUICE_COMM_TIMEOUT_S");
  return v != nullptr && *v != '\0' ? std::atoi(v) : 300;
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
      std::fprintf(stderr,
                   "sluice-comm: needs >= 2 ranks and MPI_THREAD_MULTIPLE (got %d ranks, level %d)\n",
                   size, provided);
    MPI_Finalize();
    return 2;
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
  const auto limit = sluice::conformance::test_watchdog::limit_from_environment();
  if (limit.count() > 0) listeners.Append(new sluice::conformance::test_watchdog(limit));
  const int result = RUN_ALL_TESTS();
  int worst = result;
  MPI_Allreduce(&result, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return worst;
}
