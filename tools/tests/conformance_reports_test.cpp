// The reports of `sluice conformance` (table, JUnit, JSON, Markdown) from
// made-up results: well-formed whatever the messages contain.
#include "conformance/reports.hpp"
#include "conformance/verdicts.hpp"
#include "conformance_test_results.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

namespace sluice::tool {
namespace {

using made_up::all_passing;
using made_up::facts;
using made_up::rule;
using made_up::test;

TEST(Reports, TableHasOneLinePerRuleAndTheSummary) {
  auto tests = all_passing({test("Suite", "EVT_4__again", test_outcome::failed,
                                 "e.cpp:7: Expected equality\n  a\n    Which is: 1")});
  const auto report = summarize(facts(), tests, {}, "");
  std::ostringstream out;
  print_table(out, report);
  const std::string text = out.str();
  EXPECT_NE(text.find("ORD-1    MUST   PASS\n"), std::string::npos) << text;
  EXPECT_NE(text.find("EVT-4    MUST   FAIL (Suite.EVT_4__again: e.cpp:7: Expected equality / a / "
                      "Which is: 1)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find(std::to_string(conformance::rule_count) +
                      " rules: " + std::to_string(conformance::rule_count - 1) + " pass, 1 fail"),
            std::string::npos)
      << text;
}

TEST(Reports, JunitIsEscapedAndHasOneTestcasePerRule) {
  auto tests = all_passing(
      {test("Suite", "MEM_1__bad", test_outcome::failed, "m.cpp:1: \"a\" < b & c\x01")});
  const auto report = summarize(facts(), tests, {}, "");
  std::ostringstream out;
  write_junit(out, report);
  const std::string xml = out.str();
  std::size_t testcases = 0;
  for (auto at = xml.find("<testcase "); at != std::string::npos;
       at = xml.find("<testcase ", at + 1)) {
    ++testcases;
  }
  EXPECT_EQ(testcases, conformance::rule_count);
  EXPECT_NE(xml.find("&quot;a&quot; &lt; b &amp; c"), std::string::npos) << xml;
  EXPECT_EQ(xml.find('\x01'), std::string::npos);
  EXPECT_NE(xml.find("failures=\"1\""), std::string::npos);
  EXPECT_NE(xml.find("<testcase name=\"MEM-1\""), std::string::npos);
}

// The verdict file reads back as JSON whatever the messages hold (quotes,
// control characters, bytes that are not UTF-8), one object per rule in order.
TEST(Reports, JsonVerdictsReadBackWithEveryRuleAndMessage) {
  auto tests = all_passing({test("Suite", "MEM_1__bad", test_outcome::failed,
                                 "m.cpp:1: \"a\" < b & c\x01\n\xff\xfe end")});
  const auto report = summarize(facts(), tests, {"set-up: \"x\""}, "");
  std::ostringstream out;
  write_json(out, report);
  const auto doc = nlohmann::json::parse(out.str());  // throws on a malformed file
  ASSERT_EQ(doc.at("rules").size(), conformance::rule_count);
  EXPECT_EQ(doc.at("rules").at(0).at("id"), conformance::rules[0].id);
  EXPECT_EQ(doc.at("facts").at("backend"), "host");
  EXPECT_EQ(doc.at("facts").at("devices").size(), 2U);
  EXPECT_EQ(doc.at("exit_code"), 1);
  EXPECT_EQ(doc.at("run_errors").at(0), "set-up: \"x\"");
  bool found = false;
  for (const auto& r : doc.at("rules")) {
    if (r.at("id") != "MEM-1") continue;
    found = true;
    EXPECT_EQ(r.at("verdict"), "FAIL");
    EXPECT_EQ(r.at("level"), level_name(rule(report, "MEM-1").rule->strength));
    const std::string detail = r.at("detail");
    EXPECT_NE(detail.find("m.cpp:1: \"a\" < b & c\x01\n"), std::string::npos) << detail;
    EXPECT_NE(detail.find("\xef\xbf\xbd"), std::string::npos) << "U+FFFD for a bad byte";
  }
  EXPECT_TRUE(found);
}

TEST(Reports, MarkdownCellsCannotBreakTheTable) {
  auto tests =
      all_passing({test("Suite", "PEER_2__pipe", test_outcome::failed, "p.cpp:2: a | b\nc")});
  const auto report = summarize(facts(), tests, {}, "");
  std::ostringstream out;
  write_markdown(out, report);
  const std::string md = out.str();
  EXPECT_NE(md.find("| PEER-2 |"), std::string::npos);
  EXPECT_NE(md.find("p.cpp:2: a \\| b / c |"), std::string::npos) << md;
  EXPECT_NE(md.find("| date | 1970-01-01 00:00:00 UTC |"), std::string::npos) << md;
}

}  // namespace
}  // namespace sluice::tool
