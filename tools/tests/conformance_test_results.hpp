// Made-up test results for the tests of `sluice conformance`'s verdicts,
// reports and matrix.
#pragma once

#include "cli/facts.hpp"
#include "conformance/verdicts.hpp"
#include "rules.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace sluice::tool::made_up {

inline test_record test(std::string suite, std::string name, test_outcome outcome,
                        std::string message = "") {
  test_record record;
  record.suite = std::move(suite);
  record.name = std::move(name);
  record.outcome = outcome;
  record.message = std::move(message);
  record.seconds = 0.25;
  return record;
}

inline machine_facts facts() {
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
inline std::vector<test_record> all_passing(std::vector<test_record> extra = {}) {
  std::vector<test_record> tests;
  for (const auto& rule : conformance::rules) {
    std::string name(rule.id);
    for (char& c : name) c = c == '-' ? '_' : c;
    tests.push_back(test("Suite", name + "__works", test_outcome::passed));
  }
  tests.insert(tests.end(), extra.begin(), extra.end());
  return tests;
}

inline const rule_result& rule(const conformance_report& report, const std::string& id) {
  for (const auto& result : report.rules) {
    if (result.rule->id == id) return result;
  }
  throw std::runtime_error("no rule " + id);
}

}  // namespace sluice::tool::made_up
