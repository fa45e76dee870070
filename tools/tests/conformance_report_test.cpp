// The verdicts of `sluice conformance`, from made-up test results: a rule's
// status, NOT OBSERVED only for MAY rules, NO TEST as a failure, and reports
// that stay well-formed whatever the messages contain.
#include "conformance/matrix.hpp"
#include "conformance/report.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <sstream>
#include <string>
#include <vector>

namespace sluice::tool {
namespace {

test_record test(std::string suite, std::string name, test_outcome outcome,
                 std::string message = "") {
  test_record record;
  record.suite = std::move(suite);
  record.name = std::move(name);
  record.outcome = outcome;
  record.message = std::move(message);
  record.seconds = 0.25;
  return record;
}

machine_facts facts() {
  machine_facts f;
  f.sluice_version = "0.1.0";
  f.compiler = "g++ 12";
  f.backend = "host";
  f.backend_version = "2 simulated devices";
  f.device_names = {"host device 0", "host device 1"};
  f.machine = "Linux";
  f.when = 0;
  return f;
}

//! Every rule gets one passing test, then `extra` is added on top.
std::vector<test_record> all_passing(std::vector<test_record> extra = {}) {
  std::vector<test_record> tests;
  for (const auto& rule : conformance::rules) {
    std::string name(rule.id);
    for (char& c : name) c = c == '-' ? '_' : c;
    tests.push_back(test("Suite", name + "__works", test_outcome::passed));
  }
  tests.insert(tests.end(), extra.begin(), extra.end());
  return tests;
}

const rule_result& rule(const conformance_report& report, const std::string& id) {
  for (const auto& result : report.rules) {
    if (result.rule->id == id) return result;
  }
  throw std::runtime_error("no rule " + id);
}

TEST(RuleIds, FromTestNames) {
  EXPECT_EQ(rule_id_of("EVT_4__rerecord_replaces"), "EVT-4");
  EXPECT_EQ(rule_id_of("EVT_10__blocking_sync_yields"), "EVT-10");
  EXPECT_EQ(rule_id_of("DISABLED_ORD_1__order"), "ORD-1");
  EXPECT_EQ(rule_id_of("ORD_1__order/3"), "ORD-1");
  EXPECT_EQ(rule_id_of("no_rule_here"), "");
}

TEST(Verdicts, EveryRuleInOrderAndAllPass) {
  const auto report = summarize(facts(), all_passing(), {}, "");
  ASSERT_EQ(report.rules.size(), conformance::rule_count);
  for (std::size_t i = 0; i < conformance::rule_count; ++i) {
    EXPECT_EQ(report.rules[i].rule->id, conformance::rules[i].id);
    EXPECT_EQ(report.rules[i].status, rule_status::pass);
  }
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(Verdicts, AnyFailureFailsTheRuleWithItsFirstMessage) {
  auto tests = all_passing({test("Suite", "ORD_1__second", test_outcome::failed, "a.cpp:3: first"),
                            test("Suite", "ORD_1__third", test_outcome::failed, "a.cpp:9: later")});
  const auto report = summarize(facts(), tests, {}, "");
  EXPECT_EQ(rule(report, "ORD-1").status, rule_status::fail);
  EXPECT_EQ(rule(report, "ORD-1").detail, "Suite.ORD_1__second: a.cpp:3: first");
  EXPECT_EQ(rule(report, "ORD-1").test_counts(), "1 passed, 2 failed");
  EXPECT_EQ(report.exit_code(), 1);
}

TEST(Verdicts, PassWithSomeSkippedKeepsTheReason) {
  auto tests = all_passing({test("SuiteMultiDevice", "XDEV_1__wait", test_outcome::skipped,
                                 "needs 2 devices, found 1")});
  const auto report = summarize(facts(), tests, {}, "");
  EXPECT_EQ(rule(report, "XDEV-1").status, rule_status::pass);
  EXPECT_EQ(rule(report, "XDEV-1").detail, "needs 2 devices, found 1");
}

TEST(Verdicts, AllSkippedIsSkipAndNotAFailure) {
  std::vector<test_record> tests;
  for (auto& t : all_passing()) {
    if (t.name.rfind("XDEV_1__", 0) == 0) {
      t.outcome = test_outcome::skipped;
      t.message = "needs 2 devices, found 1";
    }
    tests.push_back(t);
  }
  const auto report = summarize(facts(), tests, {}, "");
  EXPECT_EQ(rule(report, "XDEV-1").status, rule_status::skip);
  EXPECT_EQ(rule(report, "XDEV-1").detail, "needs 2 devices, found 1");
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(Verdicts, NotObservedOnlyForMayRules) {
  std::vector<test_record> tests;
  for (auto& t : all_passing()) {
    if (t.name.rfind("IND_2__", 0) == 0 || t.name.rfind("ORD_2__", 0) == 0) {
      t.outcome = test_outcome::skipped;
      t.message = "not observed: no overlap in 20 tries";
    }
    tests.push_back(t);
  }
  const auto report = summarize(facts(), tests, {}, "");
  EXPECT_EQ(rule(report, "IND-2").status, rule_status::not_observed);  // a MAY rule
  EXPECT_EQ(rule(report, "IND-2").detail, "no overlap in 20 tries");
  EXPECT_EQ(rule(report, "ORD-2").status, rule_status::skip);  // a MUST rule
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(Verdicts, RuleWithoutTestIsNoTestAndFails) {
  std::vector<test_record> tests;
  for (auto& t : all_passing()) {
    if (t.name.rfind("ERR_2__", 0) != 0) tests.push_back(t);
  }
  const auto report = summarize(facts(), tests, {}, "");
  EXPECT_EQ(rule(report, "ERR-2").status, rule_status::no_test);
  EXPECT_EQ(report.count(rule_status::no_test), 1);
  EXPECT_EQ(report.exit_code(), 1);
  // A filtered run answers only for what it ran.
  EXPECT_EQ(summarize(facts(), tests, {}, "*ORD*").exit_code(), 0);
}

TEST(Verdicts, FilteredAndDisabledRulesAreNotRun) {
  std::vector<test_record> tests;
  for (auto& t : all_passing()) {
    if (t.name.rfind("HOST_1__", 0) == 0) t.outcome = test_outcome::filtered;
    if (t.name.rfind("HOST_2__", 0) == 0) {
      t.name = "DISABLED_" + t.name;
      t.outcome = test_outcome::disabled;
    }
    tests.push_back(t);
  }
  const auto report = summarize(facts(), tests, {}, "-*HOST_1*");
  EXPECT_EQ(rule(report, "HOST-1").status, rule_status::not_run);
  EXPECT_EQ(rule(report, "HOST-1").detail, "filtered out");
  EXPECT_EQ(rule(report, "HOST-2").status, rule_status::not_run);
  EXPECT_EQ(rule(report, "HOST-2").detail, "all tests are disabled");
  EXPECT_EQ(report.exit_code(), 0);
}

TEST(Verdicts, TestsNamingNoRuleAreReportedAndTheirFailuresCount) {
  auto passing = all_passing({test("Suite", "helper_works", test_outcome::passed),
                              test("Suite", "NOPE_1__unknown_rule", test_outcome::passed)});
  EXPECT_EQ(summarize(facts(), passing, {}, "").unmatched.size(), 2U);
  EXPECT_EQ(summarize(facts(), passing, {}, "").exit_code(), 0);
  auto failing = all_passing({test("Suite", "helper_works", test_outcome::failed, "x.cpp:1: no")});
  EXPECT_EQ(summarize(facts(), failing, {}, "").exit_code(), 1);
}

TEST(Verdicts, FailuresOutsideTestsFailTheRun) {
  const auto report = summarize(facts(), all_passing(), {"suite Peer: SetUpTestSuite threw"}, "");
  EXPECT_EQ(report.exit_code(), 1);
}

TEST(Verdicts, ARunWithoutADeviceIsNotRunWithTheReasonInEveryReport) {
  machine_facts no_device = facts();
  no_device.backend = "cuda";
  no_device.device_names.clear();
  no_device.no_device_reason = "no CUDA device (no CUDA driver)";
  auto tests = all_passing({test("Suite", "HOST_2__filtered", test_outcome::filtered)});
  const auto report =
      summarize_not_run(no_device, tests, no_device.no_device_reason, "-*HOST_2__filtered");
  for (const auto& result : report.rules) {
    EXPECT_EQ(result.status, rule_status::not_run) << result.rule->id;
    EXPECT_EQ(result.detail, "no CUDA device (no CUDA driver)") << result.rule->id;
  }
  EXPECT_EQ(report.count(rule_status::not_run), static_cast<int>(conformance::rule_count));

  std::ostringstream xml;
  write_junit(xml, report);
  EXPECT_NE(xml.str().find("<testcase name=\"ORD-1\" classname=\"sluice.conformance.cuda\" "
                           "time=\"0.000\">\n      <skipped message=\"not run: no CUDA device "
                           "(no CUDA driver)\"/>"),
            std::string::npos)
      << xml.str();
  EXPECT_NE(xml.str().find("value=\"none usable: no CUDA device (no CUDA driver)\""),
            std::string::npos)
      << xml.str();
  EXPECT_NE(xml.str().find("failures=\"0\""), std::string::npos);

  std::ostringstream md;
  write_markdown(md, report);
  EXPECT_NE(md.str().find("| devices | none usable: no CUDA device (no CUDA driver) |"),
            std::string::npos)
      << md.str();
  EXPECT_NE(md.str().find("| NOT RUN | 1 not run | no CUDA device (no CUDA driver) |"),
            std::string::npos)
      << md.str();
}

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

TEST(Filters, GtestSyntax) {
  EXPECT_TRUE(matches_filter("Events.EVT_4__x", ""));
  EXPECT_TRUE(matches_filter("Events.EVT_4__x", "*EVT_*"));
  EXPECT_FALSE(matches_filter("Events.EVT_4__x", "*ORD_*"));
  EXPECT_TRUE(matches_filter("Events.EVT_4__x", "*ORD_*:Events.*"));
  EXPECT_FALSE(matches_filter("Events.EVT_4__x", "-*EVT_4*"));
  EXPECT_TRUE(matches_filter("Events.EVT_5__x", "*-*EVT_4*"));
  EXPECT_TRUE(matches_filter("Events.EVT_4__x", "Events.EVT_?__x"));
}

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
