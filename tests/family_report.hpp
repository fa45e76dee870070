// One verdict per rule for a conformance family that runs as its own
// program (KOK: tests/kokkos, COMM: tests/comm), as the suite's other
// families report them: PASS, FAIL, SKIP or NO TEST (a rule no test names
// fails the run); --markdown=FILE writes the table as Markdown
// (docs/conformance/). Header-only: each family's main() calls it.
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace sluice::conformance {

struct family_rule {
  const char* id;      // "KOK-1"
  const char* prefix;  // test names start with it: "KOK_1__"
  const char* summary;
};

struct family_verdict {
  int passed = 0, failed = 0, skipped = 0;
  std::string first_failure;
  const char* text() const {
    if (failed > 0) return "FAIL";
    if (passed > 0) return "PASS";
    if (skipped > 0) return "SKIP";
    return "NO TEST";
  }
};

//! One verdict per rule from the tests that ran, printed under `title`; 1 when
//! a rule failed or has no test (or the Markdown file cannot be written).
inline int report_family(const std::string& title, const std::vector<family_rule>& rules,
                         const char* markdown_path) {
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  std::vector<family_verdict> verdicts(rules.size());
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const ::testing::TestInfo& test = *suite.GetTestInfo(t);
      if (!test.should_run()) continue;
      for (std::size_t r = 0; r < rules.size(); ++r) {
        if (std::strncmp(test.name(), rules[r].prefix, std::strlen(rules[r].prefix)) != 0) continue;
        family_verdict& v = verdicts[r];
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
  std::size_t passing = 0, skipping = 0;
  std::string md = "| rule | verdict | tests | what it checks |\n|---|---|---|---|\n";
  std::printf("\n%s: one verdict per rule\n", title.c_str());
  for (std::size_t r = 0; r < rules.size(); ++r) {
    const family_verdict& v = verdicts[r];
    const std::string text = v.text();
    if (text == "FAIL" || text == "NO TEST") ++failing;
    if (text == "PASS") ++passing;
    if (text == "SKIP") ++skipping;
    // A MAY rule's summary says so; a skipped MAY is an effect not observed.
    const char* level = std::strncmp(rules[r].summary, "(MAY)", 5) == 0 ? "MAY " : "MUST";
    const std::string counts = std::to_string(v.passed) + " passed" +
                               (v.failed ? ", " + std::to_string(v.failed) + " failed" : "") +
                               (v.skipped ? ", " + std::to_string(v.skipped) + " skipped" : "");
    std::printf("  %-7s %s  %-7s %-22s %s%s%s\n", rules[r].id, level, text.c_str(), counts.c_str(),
                rules[r].summary, v.first_failure.empty() ? "" : ": first failure ",
                v.first_failure.c_str());
    md += std::string("| ") + rules[r].id + " | " + text + " | " + counts + " | " +
          rules[r].summary + " |\n";
  }
  std::printf("%zu rules: %zu pass, %zu skip, %d fail or without a test\n", rules.size(), passing,
              skipping, failing);
  if (markdown_path != nullptr) {
    std::ofstream out(markdown_path);
    out << md;
    if (!out) {
      std::fprintf(stderr, "%s: cannot write %s\n", title.c_str(), markdown_path);
      return 1;
    }
  }
  return failing > 0 ? 1 : 0;
}

//! The value of --markdown=FILE among argv, or null.
inline const char* markdown_argument(int argc, char** argv) {
  const char* markdown = nullptr;
  for (int i = 1; i < argc; ++i)
    if (std::strncmp(argv[i], "--markdown=", 11) == 0) markdown = argv[i] + 11;
  return markdown;
}

}  // namespace sluice::conformance
