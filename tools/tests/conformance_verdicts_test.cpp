// The verdicts of `sluice conformance`, from made-up test results: a rule's
// status, NOT OBSERVED only for MAY rules, NO TEST as a failure, NOT RUN
// without a device.
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

}  // namespace
}  // namespace sluice::tool
