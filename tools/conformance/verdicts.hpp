// From per-test results to one verdict per rule of tests/conformance/rules.hpp
// (reports.hpp writes them out). Nothing here runs a test or calls the
// backend, so the verdict logic is unit-tested with made-up results
// (tools/tests/conformance_verdicts_test.cpp).
#pragma once

#include "cli/facts.hpp"
#include "rules.hpp"

#include <string>
#include <vector>

namespace sluice::tool {

enum class test_outcome {
  passed,
  failed,
  skipped,   //!< GTEST_SKIP(); `message` holds the reason
  disabled,  //!< DISABLED_ prefix: registered, never run
  filtered,  //!< excluded by --filter
  not_run    //!< the run could not start (no device); `message` holds why
};

//! One gtest test as the runner saw it.
struct test_record {
  std::string suite;  //!< "Events"
  std::string name;   //!< "EVT_4__rerecord_replaces"
  test_outcome outcome = test_outcome::passed;
  std::string message;  //!< first failure ("file:line: text") or the skip reason
  double seconds = 0;

  std::string full_name() const { return suite + "." + name; }
};

enum class rule_status {
  pass,
  fail,
  skip,          //!< every test that ran skipped
  not_observed,  //!< a MAY rule whose probes skipped with "not observed: ..."
  no_test,       //!< no test names this rule: counted as a failure
  not_run        //!< tests exist but none ran: --filter excluded them, all are disabled,
                 //!< or the run could not start (no device)
};

//! "MUST" or "MAY".
const char* level_name(conformance::level level) noexcept;

//! "PASS", "FAIL", "SKIP", "NOT OBSERVED", "NO TEST", "NOT RUN".
const char* to_string(rule_status status) noexcept;

struct rule_result {
  const conformance::rule* rule = nullptr;
  rule_status status = rule_status::no_test;
  std::string detail;  //!< failure message or reason (may span lines)
  std::vector<test_record> tests;
  int passed = 0, failed = 0, skipped = 0, not_run = 0;
  double seconds = 0;

  //! "3 passed", "1 passed, 1 skipped", "2 filtered out"
  std::string test_counts() const;
};

struct conformance_report {
  machine_facts facts;
  std::string filter;                   //!< --filter, empty when none
  std::vector<rule_result> rules;       //!< in the order of conformance::rules
  std::vector<test_record> unmatched;   //!< tests naming no rule of rules.hpp
  std::vector<std::string> run_errors;  //!< failures outside any test (suite set-up, ...)

  int count(rule_status status) const;
  //! 0 when no rule failed, no unmatched test failed, the run had no error and,
  //! unless a filter was given, every rule has a test; 1 otherwise.
  int exit_code() const;
  //! "45 rules: 40 pass, 1 fail, 2 skip, 1 not observed, 1 no test"
  std::string summary() const;
};

//! The rule a test checks: "EVT_4__rerecord" -> "EVT-4" (a DISABLED_ prefix
//! and a parameter suffix "/0" are ignored); empty when the name has no "__".
std::string rule_id_of(const std::string& test_name);

//! Sorts the tests onto the rules and decides each rule's status.
conformance_report summarize(machine_facts facts, const std::vector<test_record>& tests,
                             std::vector<std::string> run_errors, std::string filter);

//! The report of a run that could not start, e.g. a GPU backend without a
//! device: every test that would have run becomes test_outcome::not_run with
//! `reason`, so each rule with a test is NOT RUN with that reason.
conformance_report summarize_not_run(machine_facts facts, std::vector<test_record> tests,
                                     const std::string& reason, std::string filter);

//! Collapses a multi-line message onto one line and cuts it at `limit` characters.
std::string one_line(const std::string& text, std::size_t limit = std::string::npos);

}  // namespace sluice::tool
