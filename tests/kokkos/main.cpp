// main() of sluice-conformance-kokkos-<backend>: Kokkos initialized around the
// KOK tests (docs/semantics.md), then one verdict per rule, as the suite's
// other families report them: PASS, FAIL, SKIP or NO TEST (a rule no test
// names fails the run). --markdown=FILE also writes the table as Markdown
// (docs/conformance/kokkos-*.md). A GPU backend without its GPU runs nothing
// and exits with 77 (ctest: skipped, never passed).
#include "../conformance/watchdog.hpp"

#include <sluice/backend.hpp>
#include <sluice/device.hpp>

#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct rule {
  const char* id;
  const char* prefix;  // test names start with it
  const char* summary;
};
constexpr rule rules[] = {
    {"KOK-1", "KOK_1__", "Kokkos work submitted on s runs after earlier and before later work"},
    {"KOK-2", "KOK_2__", "submit returns without waiting for the Kokkos work"},
    {"KOK-3", "KOK_3__", "an event recorded after submit captures the Kokkos work"},
    {"KOK-4", "KOK_4__", "Kokkos work on one stream holds no other stream (no global fence)"},
    {"KOK-5", "KOK_5__",
     "an exception of the submitted function is reported once; later work runs"},
};

struct verdict {
  int passed = 0, failed = 0, skipped = 0;
  std::string first_failure;
  const char* text() const {
    if (failed > 0) return "FAIL";
    if (passed > 0) return "PASS";
    if (skipped > 0) return "SKIP";
    return "NO TEST";
  }
};

//! One verdict per rule from the tests that ran; 1 when a rule failed or has no test.
int report(const char* markdown_path) {
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  std::vector<verdict> verdicts(std::size(rules));
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const ::testing::TestInfo& test = *suite.GetTestInfo(t);
      if (!test.should_run()) continue;
      for (std::size_t r = 0; r < std::size(rules); ++r) {
        if (std::strncmp(test.name(), rules[r].prefix, std::strlen(rules[r].prefix)) != 0) continue;
        verdict& v = verdicts[r];
        if (test.result()->Failed()) {
          ++v.failed;
          if (v.first_failure.empty())
            v.first_failure = std::string(suite.name()) + "." + test.name();
        } else if (test.result()->Skipped()) {
          ++v.skipped;
        } else {
          ++v.passed;
        }
      }
    }
  }
  int failing = 0;
  std::string md = "| rule | verdict | tests | what it checks |\n|---|---|---|---|\n";
  std::printf("\nsluice-conformance-kokkos-%s: one verdict per rule\n", sluice::backend_name());
  for (std::size_t r = 0; r < std::size(rules); ++r) {
    const verdict& v = verdicts[r];
    const std::string text = v.text();
    if (text == "FAIL" || text == "NO TEST") ++failing;
    const std::string counts = std::to_string(v.passed) + " passed" +
                               (v.failed ? ", " + std::to_string(v.failed) + " failed" : "") +
                               (v.skipped ? ", " + std::to_string(v.skipped) + " skipped" : "");
    std::printf("  %-6s MUST  %-7s %-22s %s%s%s\n", rules[r].id, text.c_str(), counts.c_str(),
                rules[r].summary, v.first_failure.empty() ? "" : ": first failure ",
                v.first_failure.c_str());
    md += std::string("| ") + rules[r].id + " | " + text + " | " + counts + " | " +
          rules[r].summary + " |\n";
  }
  std::printf("%zu rules: %zu pass, %d fail or without a test\n", std::size(rules),
              std::size(rules) - static_cast<std::size_t>(failing), failing);
  if (markdown_path != nullptr) {
    std::ofstream out(markdown_path);
    out << md;
    if (!out) {
      std::fprintf(stderr, "sluice-conformance-kokkos: cannot write %s\n", markdown_path);
      return 1;
    }
  }
  return failing > 0 ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ::testing::InitGoogleTest(&argc, argv);
  const char* markdown = nullptr;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--markdown=", 11) == 0) markdown = argv[i] + 11;
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
  if (::testing::GTEST_FLAG(filter) == "*" && report(markdown) != 0) result = 1;
  return result;
}
