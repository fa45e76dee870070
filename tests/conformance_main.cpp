// main() of the ctest executables sluice-conformance-<backend> (the `sluice
// conformance` command has its own runner). Besides running the tests it makes
// two quiet outcomes fail the ctest run:
//   - no test ran (a filter that matches nothing, or an unknown flag: gtest
//     1.12 then prints its help and returns 0);
//   - a test was skipped although its skip is not expected, so that a backend
//     cannot pass the suite by skipping.
// SLUICE_CONFORMANCE_ALLOWED_SKIPS (set by tests/CMakeLists.txt per backend) is
// a comma-separated list of "Suite.Name" patterns ('*' matches any run of
// characters) whose skips are expected. MAY probes that were not observed
// (SLUICE_NOT_OBSERVED: "not observed: ...") are always accepted: they report
// a capability, never a failure. Without the variable, skips are not checked.
//
// A GPU backend on a machine without its GPU (CI) runs nothing: it says so and
// exits with 77, which ctest reports as "Skipped" (SKIP_RETURN_CODE), not as a pass.
#include "fault.hpp"
#include "watchdog.hpp"

#include <sluice/backend.hpp>
#include <sluice/device.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

bool glob_match(std::string_view pattern, std::string_view text) {
  if (pattern.empty()) return text.empty();
  if (pattern.front() == '*') {
    for (std::size_t skip = 0; skip <= text.size(); ++skip)
      if (glob_match(pattern.substr(1), text.substr(skip))) return true;
    return false;
  }
  return !text.empty() && pattern.front() == text.front() &&
         glob_match(pattern.substr(1), text.substr(1));
}

std::vector<std::string> split_patterns(const std::string& list) {
  std::vector<std::string> patterns;
  std::size_t begin = 0;
  while (begin <= list.size()) {
    const std::size_t end = std::min(list.find(',', begin), list.size());
    if (end > begin) patterns.push_back(list.substr(begin, end - begin));
    begin = end + 1;
  }
  return patterns;
}

std::string skip_message(const ::testing::TestResult& result) {
  std::string message;
  for (int i = 0; i < result.total_part_count(); ++i) {
    const ::testing::TestPartResult& part = result.GetTestPartResult(i);
    if (part.skipped()) message += part.message();
  }
  return message;
}

//! The number of skips that are not expected; each is printed.
int unexpected_skips(const char* allowed) {
  const std::vector<std::string> patterns = split_patterns(allowed);
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  int unexpected = 0;
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const ::testing::TestInfo& test = *suite.GetTestInfo(t);
      if (!test.should_run() || !test.result()->Skipped()) continue;
      const std::string name = std::string(suite.name()) + "." + test.name();
      const std::string message = skip_message(*test.result());
      if (message.find("not observed:") != std::string::npos) continue;
      const bool expected = std::any_of(patterns.begin(), patterns.end(),
                                        [&](const std::string& p) { return glob_match(p, name); });
      if (expected) continue;
      ++unexpected;
      std::fprintf(stderr, "[  SKIPPED ] %s: unexpected skip (%s)\n", name.c_str(),
                   message.c_str());
    }
  }
  if (unexpected > 0)
    std::fprintf(stderr,
                 "sluice-conformance: %d unexpected skip(s); expected skips: \"%s\" and MAY "
                 "probes not observed\n",
                 unexpected, allowed);
  return unexpected;
}

}  // namespace

int main(int argc, char** argv) {
  if (sluice::conformance::fault_child_requested()) return sluice::conformance::fault_child_main();
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // a killed run keeps what it printed
  ::testing::InitGoogleTest(&argc, argv);
  if (sluice::backend() != sluice::backend_kind::host && sluice::device_count() == 0) {
    std::printf("sluice-conformance-%s: no %s device: every conformance test needs one; none ran\n",
                sluice::backend_name(),
                sluice::backend() == sluice::backend_kind::cuda ? "CUDA" : "HIP");
    return 77;
  }
  sluice::conformance::install_watchdog();  // a hanging test is named, then exit 124
  int result = RUN_ALL_TESTS();
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  if (unit.test_to_run_count() == 0) {
    std::fprintf(stderr, "sluice-conformance: no test ran\n");
    return 1;
  }
  if (const char* allowed = std::getenv("SLUICE_CONFORMANCE_ALLOWED_SKIPS"))
    if (unexpected_skips(allowed) > 0) result = 1;
  // Every test that ran was skipped (a run of one multi-device test on one
  // device): ctest shows it as skipped, never as passed.
  if (result == 0 && unit.successful_test_count() == 0 && unit.skipped_test_count() > 0) {
    std::printf("sluice-conformance: every test that ran was skipped\n");
    return 77;
  }
  // A failure under the host backend's chaos mode names its seed, to replay it.
  if (const char* chaos = std::getenv("SLUICE_HOST_CHAOS"); result != 0 && chaos != nullptr)
    std::fprintf(stderr,
                 "sluice-conformance: failed under SLUICE_HOST_CHAOS=%s; replay with that seed\n",
                 chaos);
  return result;
}
