// `sluice conformance matrix`: its reader takes what write_json writes, says
// what is wrong with a bad file, and its table marks the rules whose
// verdicts differ.
#include "conformance/matrix.hpp"
#include "conformance/reports.hpp"
#include "conformance/verdicts.hpp"
#include "conformance_test_results.hpp"

#include <gtest/gtest.h>

#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::tool {
namespace {

using made_up::all_passing;
using made_up::facts;
using made_up::rule;
using made_up::test;

// The matrix's reader takes what write_json writes: every rule of rules.hpp in
// order, with its level and verdict, and the facts.
TEST(Matrix, ReadsTheVerdictFileWriteJsonWrites) {
  auto tests = all_passing({test("Suite", "MEM_1__bad", test_outcome::failed, "m.cpp:1: \"x\"")});
  std::ostringstream out;
  write_json(out, summarize(facts(), tests, {}, ""));
  const verdict_file file = read_verdicts(out.str(), "host-chaos");
  EXPECT_EQ(file.label, "host-chaos");
  EXPECT_EQ(file.backend, "host");
  EXPECT_EQ(file.machine, "Linux");
  ASSERT_EQ(file.rules.size(), conformance::rule_count);
  for (std::size_t i = 0; i < file.rules.size(); ++i) {
    EXPECT_EQ(file.rules[i].id, conformance::rules[i].id);
    EXPECT_EQ(file.rules[i].level, level_name(conformance::rules[i].strength));
    EXPECT_EQ(file.rules[i].verdict, file.rules[i].id == "MEM-1" ? "FAIL" : "PASS");
  }
}

//! What read_verdicts throws for `text`; empty when it reads it.
std::string read_error(const std::string& text) {
  try {
    read_verdicts(text, "x");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

TEST(Matrix, BadFilesAreRuntimeErrorsSayingWhatIsWrong) {
  const std::string head = R"({"format": "sluice-conformance-verdicts", "version": 1, )"
                           R"("facts": {"backend": "host", "machine": "m", "date": "d"}, )";
  const std::string rule = R"({"id": "ORD-1", "level": "MUST", "verdict": "PASS"})";
  EXPECT_EQ(read_error(head + R"("rules": [)" + rule + "]}"), "");
  EXPECT_NE(read_error("").find("not a JSON document"), std::string::npos);
  EXPECT_NE(read_error((head + R"("rules": [)" + rule).substr(0, 80)).find("not a JSON document"),
            std::string::npos);
  EXPECT_EQ(read_error("[1, 2]"), "the document is not a JSON object");
  EXPECT_NE(read_error(R"({"format": "x"})").find("not a verdict file"), std::string::npos);
  EXPECT_NE(read_error(R"({"format": "sluice-conformance-verdicts", "version": "1"})")
                .find("version is missing or not 1"),
            std::string::npos);
  EXPECT_EQ(read_error(head + R"("filter": ""})"), "the document has no \"rules\"");
  EXPECT_EQ(read_error(head + R"("rules": {}})"), "\"rules\" is not an array");
  EXPECT_EQ(read_error(head + R"("rules": []})"), "\"rules\" is empty");
  EXPECT_EQ(read_error(head + R"("rules": [)" + rule + ", 7]}"), "rules[1] is not an object");
  EXPECT_EQ(read_error(head + R"("rules": [{"id": 3}]})"), "rules[0].id is number, not a string");
  EXPECT_EQ(read_error(head + R"("rules": [{"id": "A-1", "level": "MUST"}]})"),
            "rules[0] (A-1) has no \"verdict\"");
  EXPECT_EQ(read_error(head + R"("rules": [{"id": "A-1", "level": "MUST", "verdict": "OK"}]})"),
            "rules[0] (A-1): unknown verdict \"OK\"");
  EXPECT_EQ(read_error(head + R"("rules": [)" + rule + ", " + rule + "]}"),
            "rules[1]: rule ORD-1 appears twice");
  EXPECT_EQ(read_error(R"({"format": "sluice-conformance-verdicts", "version": 1, "facts": )"
                       R"({"backend": ["host"]}, "rules": []})"),
            "facts.backend is array, not a string");
}

// Rows in the first file's order, a rule only the second has after them, "-"
// where a file lacks a rule, "*" where the runs' verdicts differ (NOT RUN aside).
TEST(Matrix, MarksRowsWhoseVerdictsDiffer) {
  verdict_file a{"host", "host", "m", "d", {{"B-1", "MUST", "PASS"}, {"A-1", "MAY", "PASS"}}};
  verdict_file b{
      "cuda",
      "cuda",
      "m",
      "d",
      {{"A-1", "MAY", "NOT OBSERVED"}, {"B-1", "MUST", "NOT RUN"}, {"C-1", "MUST", "FAIL"}}};
  std::ostringstream out;
  print_matrix(out, {a, b}, false);
  const std::string text = out.str();
  EXPECT_NE(text.find("rule   level  host  cuda          hip on AMD\n"
                      "B-1    MUST   PASS  NOT RUN       not run: no AMD GPU\n"
                      "A-1 *  MAY    PASS  NOT OBSERVED  not run: no AMD GPU\n"
                      "C-1    MUST   -     FAIL          not run: no AMD GPU\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("* 1 rule's verdicts differ"), std::string::npos) << text;
}

}  // namespace
}  // namespace sluice::tool
