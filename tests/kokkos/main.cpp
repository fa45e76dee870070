// main() of sluice-conformance-kokkos-<backend>: Kokkos initialized around the
// KOK tests (docs/semantics.md), then one verdict per rule, as the suite's
// other families report them: PASS, FAIL, SKIP or NO TEST (a rule no test
// names fails the run). --markdown=FILE also writes the table as Markdown
// (docs/conformance/kokkos-*.md). A GPU backend without its GPU runs nothing
// and exits with 77 (ctest: skipped, never passed).
#include "../conformance/watchdog.hpp"
#include "../family_report.hpp"

#include <sluice/backend.hpp>
#include <sluice/device.hpp>

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

const std::vector<sluice::conformance::family_rule> rules = {
    {"KOK-1", "KOK_1__", "Kokkos work submitted on s runs after earlier and before later work"},
    {"KOK-2", "KOK_2__", "submit returns without waiting for the Kokkos work"},
    {"KOK-3", "KOK_3__", "an event recorded after submit captures the Kokkos work"},
    {"KOK-4", "KOK_4__", "Kokkos work on one stream holds no other stream (no global fence)"},
    {"KOK-5", "KOK_5__",
     "an exception of the submitted function is reported once; later work runs"},
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ::testing::InitGoogleTest(&argc, argv);
  const char* markdown = sluice::conformance::markdown_argument(argc, argv);
  if (sluice::backend() != sluice::backend_kind::host && sluice::device_count() == 0) {
    std::printf("sluice-conformance-kokkos-%s: no %s device: none of the KOK tests ran\n",
                sluice::backend_name(),
                sluice::backend() == sluice::backend_kind::cuda ? "CUDA" : "HIP");
    return 77;
  }
  const Kokkos::ScopeGuard kokkos(argc, argv);
  sluice::conformance::install_watchdog();  // a hanging test is named, then exit 124
  int result = RUN_ALL_TESTS();
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "sluice-conformance-kokkos: no test ran\n");
    return 1;
  }
  // With a filter (the mutation runs) only gtest's result counts.
  if (::testing::GTEST_FLAG(filter) == "*" &&
      sluice::conformance::report_family(
          std::string("sluice-conformance-kokkos-") + sluice::backend_name(), rules, markdown) != 0)
    result = 1;
  return result;
}
