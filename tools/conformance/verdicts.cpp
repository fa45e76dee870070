#include "conformance/verdicts.hpp"

#include <algorithm>
#include <sstream>

namespace sluice::tool {

namespace {

constexpr const char* not_observed_prefix = "not observed:";
constexpr const char* disabled_prefix = "DISABLED_";

bool starts_with(const std::string& text, const std::string& prefix) {
  return text.compare(0, prefix.size(), prefix) == 0;
}

std::string trim(const std::string& text) {
  const auto first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return {};
  const auto last = text.find_last_not_of(" \t\r\n");
  return text.substr(first, last - first + 1);
}

const test_record* first_with(const std::vector<test_record>& tests, test_outcome outcome) {
  for (const auto& test : tests) {
    if (test.outcome == outcome) return &test;
  }
  return nullptr;
}

std::string skip_reason(const test_record& test) {
  const std::string reason = trim(test.message);
  return reason.empty() ? "skipped without a reason" : reason;
}

void decide(rule_result& result) {
  if (result.tests.empty()) {
    result.status = rule_status::no_test;
    result.detail = "no test names this rule";
    return;
  }
  if (result.passed + result.failed + result.skipped == 0) {
    result.status = rule_status::not_run;
    if (const test_record* not_run = first_with(result.tests, test_outcome::not_run)) {
      result.detail = trim(not_run->message);
    } else {
      result.detail = first_with(result.tests, test_outcome::filtered) != nullptr
                          ? "filtered out"
                          : "all tests are disabled";
    }
    return;
  }
  if (const test_record* failed = first_with(result.tests, test_outcome::failed)) {
    result.status = rule_status::fail;
    result.detail = failed->full_name() + ": " + trim(failed->message);
    return;
  }
  const test_record* skipped = first_with(result.tests, test_outcome::skipped);
  if (result.passed > 0) {
    result.status = rule_status::pass;
    if (skipped != nullptr) result.detail = skip_reason(*skipped);
    return;
  }
  // Every test that ran skipped. A MAY probe that did not see the behavior
  // says so with SLUICE_NOT_OBSERVED ("not observed: why").
  if (result.rule->strength == conformance::level::may) {
    for (const auto& test : result.tests) {
      if (test.outcome == test_outcome::skipped &&
          starts_with(trim(test.message), not_observed_prefix)) {
        result.status = rule_status::not_observed;
        result.detail = trim(trim(test.message).substr(std::string(not_observed_prefix).size()));
        return;
      }
    }
  }
  result.status = rule_status::skip;
  result.detail = skip_reason(*skipped);
}

std::string counts_text(int passed, int failed, int skipped, int not_run) {
  std::ostringstream out;
  const char* separator = "";
  auto add = [&](int n, const char* what) {
    if (n == 0) return;
    out << separator << n << ' ' << what;
    separator = ", ";
  };
  add(passed, "passed");
  add(failed, "failed");
  add(skipped, "skipped");
  add(not_run, "not run");
  const std::string text = out.str();
  return text.empty() ? "none" : text;
}

}  // namespace

const char* level_name(conformance::level level) noexcept {
  return level == conformance::level::must ? "MUST" : "MAY";
}

const char* to_string(rule_status status) noexcept {
  switch (status) {
    case rule_status::pass: return "PASS";
    case rule_status::fail: return "FAIL";
    case rule_status::skip: return "SKIP";
    case rule_status::not_observed: return "NOT OBSERVED";
    case rule_status::no_test: return "NO TEST";
    case rule_status::not_run: return "NOT RUN";
  }
  return "?";
}

std::string rule_result::test_counts() const {
  return counts_text(passed, failed, skipped, not_run);
}

int conformance_report::count(rule_status status) const {
  return static_cast<int>(std::count_if(rules.begin(), rules.end(),
                                        [&](const rule_result& r) { return r.status == status; }));
}

int conformance_report::exit_code() const {
  const bool unmatched_failed =
      std::any_of(unmatched.begin(), unmatched.end(),
                  [](const test_record& t) { return t.outcome == test_outcome::failed; });
  // A filtered run answers for the tests it ran; the whole suite answers for every rule.
  const bool missing_tests = filter.empty() && count(rule_status::no_test) > 0;
  const bool bad =
      count(rule_status::fail) > 0 || missing_tests || unmatched_failed || !run_errors.empty();
  return bad ? 1 : 0;
}

std::string conformance_report::summary() const {
  std::ostringstream out;
  out << rules.size() << " rules: " << count(rule_status::pass) << " pass, "
      << count(rule_status::fail) << " fail, " << count(rule_status::skip) << " skip, "
      << count(rule_status::not_observed) << " not observed, " << count(rule_status::no_test)
      << " no test";
  if (const int not_run = count(rule_status::not_run); not_run > 0)
    out << ", " << not_run << " not run";
  return out.str();
}

std::string rule_id_of(const std::string& test_name) {
  std::string name = test_name;
  if (starts_with(name, disabled_prefix)) name.erase(0, std::string(disabled_prefix).size());
  char buffer[32];
  return std::string(conformance::rule_of_test(name, buffer, sizeof buffer));
}

conformance_report summarize(machine_facts facts, const std::vector<test_record>& tests,
                             std::vector<std::string> run_errors, std::string filter) {
  conformance_report report;
  report.facts = std::move(facts);
  report.filter = std::move(filter);
  report.run_errors = std::move(run_errors);
  for (const auto& rule : conformance::rules) {
    rule_result result;
    result.rule = &rule;
    report.rules.push_back(result);
  }
  for (const auto& test : tests) {
    const std::string id = rule_id_of(test.name);
    auto rule = std::find_if(report.rules.begin(), report.rules.end(),
                             [&](const rule_result& r) { return !id.empty() && r.rule->id == id; });
    if (rule == report.rules.end()) {
      report.unmatched.push_back(test);
      continue;
    }
    rule->tests.push_back(test);
    rule->seconds += test.seconds;
    switch (test.outcome) {
      case test_outcome::passed: ++rule->passed; break;
      case test_outcome::failed: ++rule->failed; break;
      case test_outcome::skipped: ++rule->skipped; break;
      case test_outcome::disabled:
      case test_outcome::filtered:
      case test_outcome::not_run: ++rule->not_run; break;
    }
  }
  for (auto& result : report.rules) decide(result);
  return report;
}

conformance_report summarize_not_run(machine_facts facts, std::vector<test_record> tests,
                                     const std::string& reason, std::string filter) {
  for (auto& test : tests) {
    if (test.outcome == test_outcome::disabled || test.outcome == test_outcome::filtered) continue;
    test.outcome = test_outcome::not_run;
    test.message = reason;
    test.seconds = 0;
  }
  return summarize(std::move(facts), tests, {}, std::move(filter));
}

std::string one_line(const std::string& text, std::size_t limit) {
  std::string out;
  bool pending_break = false;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    line = trim(line);
    if (line.empty()) continue;
    if (pending_break) out += " / ";
    out += line;
    pending_break = true;
  }
  if (out.size() > limit) {
    out.resize(limit > 3 ? limit - 3 : 0);
    out += "...";
  }
  return out;
}

}  // namespace sluice::tool
