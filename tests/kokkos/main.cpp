// main() of sluice-conformance-kokkos-<backend>: Kokkos initialized around the
// KOK tests (docs/semantics.md). A GPU backend without its GPU runs nothing and
// exits with 77 (ctest: skipped, never passed).
#include <sluice/backend.hpp>
#include <sluice/device.hpp>

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <cstdio>

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ::testing::InitGoogleTest(&argc, argv);
  if (sluice::backend() != sluice::backend_kind::host && sluice::device_count() == 0) {
    std::printf("sluice-conformance-kokkos-%s: no %s device: none of the KOK tests ran\n",
                sluice::backend_name(),
                sluice::backend() == sluice::backend_kind::cuda ? "CUDA" : "HIP");
    return 77;
  }
  const Kokkos::ScopeGuard kokkos(argc, argv);
  const int result = RUN_ALL_TESTS();
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "sluice-conformance-kokkos: no test ran\n");
    return 1;
  }
  return result;
}
