#include "conformance/report.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ostream>
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

std::string xml_escaped(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no control characters but tab, newline and carriage return.
        if (static_cast<unsigned char>(c) >= 0x20 || c == '\t' || c == '\n' || c == '\r') {
          out += c;
        }
    }
  }
  return out;
}

std::string markdown_cell(const std::string& text) {
  std::string out;
  for (const char c : one_line(text)) {
    if (c == '|') {
      out += "\\|";
    } else if (c == '<') {
      out += "&lt;";
    } else {
      out += c;
    }
  }
  return out;
}

std::string seconds_text(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", seconds);
  return text;
}

const char* outcome_name(test_outcome outcome) {
  switch (outcome) {
    case test_outcome::passed: return "passed";
    case test_outcome::failed: return "failed";
    case test_outcome::skipped: return "skipped";
    case test_outcome::disabled: return "disabled";
    case test_outcome::filtered: return "filtered out";
    case test_outcome::not_run: return "not run";
  }
  return "?";
}

//! The tests of one rule, one per line, for JUnit's system-out.
std::string test_list(const std::vector<test_record>& tests) {
  std::ostringstream out;
  for (const auto& test : tests) {
    out << test.full_name() << ": " << outcome_name(test.outcome);
    if (!test.message.empty() && test.outcome != test_outcome::passed) {
      out << ": " << one_line(test.message, 300);
    }
    out << '\n';
  }
  return out.str();
}

//! The text after the status word in the terminal table, e.g. " (needs 2 devices)".
std::string table_detail(const rule_result& result) {
  switch (result.status) {
    case rule_status::pass:
      if (result.skipped == 0) return {};
      return " (" + std::to_string(result.skipped) + " of " +
             std::to_string(result.passed + result.skipped) +
             " tests skipped: " + one_line(result.detail, 100) + ")";
    case rule_status::fail: return " (" + one_line(result.detail, 240) + ")";
    case rule_status::no_test: return {};
    default: return " (" + one_line(result.detail, 160) + ")";
  }
}

bool wildcard_match(const char* pattern, const char* text) {
  // Iterative glob match with backtracking to the last '*'.
  const char* star = nullptr;
  const char* resume = nullptr;
  while (*text != '\0') {
    if (*pattern == '*') {
      star = pattern++;
      resume = text;
    } else if (*pattern == '?' || *pattern == *text) {
      ++pattern;
      ++text;
    } else if (star != nullptr) {
      pattern = star + 1;
      text = ++resume;
    } else {
      return false;
    }
  }
  while (*pattern == '*') ++pattern;
  return *pattern == '\0';
}

bool matches_any(const std::string& name, const std::string& patterns) {
  std::size_t start = 0;
  while (start <= patterns.size()) {
    const auto end = std::min(patterns.find(':', start), patterns.size());
    if (wildcard_match(patterns.substr(start, end - start).c_str(), name.c_str())) return true;
    start = end + 1;
  }
  return false;
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

void print_table(std::ostream& out, const conformance_report& report) {
  out << "RULE     LEVEL  RESULT\n";
  for (const auto& result : report.rules) {
    std::string id(result.rule->id);
    id.resize(std::max<std::size_t>(id.size(), 8), ' ');
    std::string level = level_name(result.rule->strength);
    level.resize(6, ' ');
    out << id << ' ' << level << ' ' << to_string(result.status) << table_detail(result) << '\n';
  }
  if (!report.unmatched.empty()) {
    out << "\nTests that name no rule of rules.hpp (expected <RULE>_<N>__<what>):\n";
    for (const auto& test : report.unmatched) {
      out << "  " << test.full_name() << ": " << outcome_name(test.outcome);
      if (test.outcome == test_outcome::failed || test.outcome == test_outcome::skipped) {
        out << " (" << one_line(test.message, 200) << ')';
      }
      out << '\n';
    }
  }
  if (!report.run_errors.empty()) {
    out << "\nFailures outside any test:\n";
    for (const auto& error : report.run_errors) out << "  " << one_line(error, 300) << '\n';
  }
  int ran = 0;
  double seconds = 0;
  for (const auto& result : report.rules) {
    ran += result.passed + result.failed + result.skipped;
    seconds += result.seconds;
  }
  for (const auto& test : report.unmatched) {
    if (test.outcome == test_outcome::passed || test.outcome == test_outcome::failed ||
        test.outcome == test_outcome::skipped)
      ++ran;
    seconds += test.seconds;
  }
  char time[32];
  std::snprintf(time, sizeof time, "%.1f", seconds);
  out << '\n' << report.summary() << " (" << ran << " tests ran in " << time << " s)\n";
}

void write_junit(std::ostream& out, const conformance_report& report) {
  int failures = report.count(rule_status::fail) + report.count(rule_status::no_test);
  int skipped = report.count(rule_status::skip) + report.count(rule_status::not_observed) +
                report.count(rule_status::not_run);
  double seconds = 0;
  for (const auto& result : report.rules) seconds += result.seconds;
  for (const auto& test : report.unmatched) {
    if (test.outcome == test_outcome::failed) ++failures;
    if (test.outcome != test_outcome::passed && test.outcome != test_outcome::failed) ++skipped;
    seconds += test.seconds;
  }
  const int errors = report.run_errors.empty() ? 0 : 1;
  const std::size_t tests = report.rules.size() + report.unmatched.size() + errors;
  const std::string suite = "sluice.conformance." + report.facts.backend;
  const auto& facts = report.facts;

  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<testsuites name=\"sluice conformance\" tests=\"" << tests << "\" failures=\"" << failures
      << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\""
      << seconds_text(seconds) << "\" timestamp=\"" << iso_date(facts.when) << "\">\n"
      << "  <testsuite name=\"" << xml_escaped(suite) << "\" tests=\"" << tests << "\" failures=\""
      << failures << "\" errors=\"" << errors << "\" skipped=\"" << skipped << "\" time=\""
      << seconds_text(seconds) << "\" timestamp=\"" << iso_date(facts.when)
      << "\">\n    <properties>\n";
  const std::pair<const char*, std::string> properties[] = {
      {"sluice", facts.sluice_version},
      {"compiler", facts.compiler},
      {"backend", facts.backend},
      {"backend_version", facts.backend_version},
      {"device_count", std::to_string(facts.device_names.size())},
      {"devices", device_list(facts)},
      {"machine", facts.machine},
      {"date", utc_date(facts.when)},
      {"filter", report.filter}};
  for (const auto& [name, value] : properties) {
    out << "      <property name=\"" << name << "\" value=\"" << xml_escaped(value) << "\"/>\n";
  }
  out << "    </properties>\n";

  for (const auto& result : report.rules) {
    out << "    <testcase name=\"" << result.rule->id << "\" classname=\"" << xml_escaped(suite)
        << "\" time=\"" << seconds_text(result.seconds) << "\">\n";
    const std::string message = one_line(result.detail, 500);
    switch (result.status) {
      case rule_status::pass: break;
      case rule_status::fail:
        out << "      <failure type=\"FAIL\" message=\"" << xml_escaped(message) << "\">"
            << xml_escaped(result.detail) << "</failure>\n";
        break;
      case rule_status::no_test:
        out << "      <failure type=\"NO TEST\" message=\"no test names rule " << result.rule->id
            << "\"/>\n";
        break;
      case rule_status::not_observed:
        out << "      <skipped message=\"not observed: " << xml_escaped(message) << "\"/>\n";
        break;
      case rule_status::skip:
        out << "      <skipped message=\"" << xml_escaped(message) << "\"/>\n";
        break;
      case rule_status::not_run:
        out << "      <skipped message=\"not run: " << xml_escaped(message) << "\"/>\n";
        break;
    }
    out << "      <system-out>" << result.rule->id << ' ' << level_name(result.rule->strength)
        << ": " << xml_escaped(std::string(result.rule->summary)) << '\n'
        << xml_escaped(test_list(result.tests)) << "</system-out>\n    </testcase>\n";
  }
  for (const auto& test : report.unmatched) {
    out << "    <testcase name=\"" << xml_escaped(test.full_name()) << "\" classname=\""
        << xml_escaped(suite) << ".no_rule\" time=\"" << seconds_text(test.seconds) << "\">\n";
    if (test.outcome == test_outcome::failed) {
      out << "      <failure type=\"FAIL\" message=\"" << xml_escaped(one_line(test.message, 500))
          << "\">" << xml_escaped(test.message) << "</failure>\n";
    } else if (test.outcome != test_outcome::passed) {
      out << "      <skipped message=\"" << xml_escaped(one_line(test.message, 500)) << "\"/>\n";
    }
    out << "    </testcase>\n";
  }
  if (errors != 0) {
    std::string all;
    for (const auto& error : report.run_errors) all += error + "\n";
    out << "    <testcase name=\"failures outside tests\" classname=\"" << xml_escaped(suite)
        << "\">\n      <error message=\"" << xml_escaped(one_line(all, 500)) << "\">"
        << xml_escaped(all) << "</error>\n    </testcase>\n";
  }
  out << "  </testsuite>\n</testsuites>\n";
}

void write_markdown(std::ostream& out, const conformance_report& report) {
  const auto& facts = report.facts;
  out << "# sluice conformance: " << facts.backend << " backend\n\n"
      << "| fact | value |\n|---|---|\n"
      << "| sluice | "
      << markdown_cell(facts.sluice_version + " (built with " + facts.compiler + ")") << " |\n"
      << "| backend | " << markdown_cell(facts.backend + " (" + facts.backend_version + ")")
      << " |\n"
      << "| devices | " << markdown_cell(device_list(facts)) << " |\n"
      << "| machine | " << markdown_cell(facts.machine) << " |\n"
      << "| date | " << utc_date(facts.when) << " |\n";
  if (!report.filter.empty()) out << "| filter | `" << markdown_cell(report.filter) << "` |\n";
  out << "| result | " << report.summary() << " |\n\n"
      << "| rule | what | level | result | tests | detail |\n|---|---|---|---|---|---|\n";
  for (const auto& result : report.rules) {
    out << "| " << result.rule->id << " | " << markdown_cell(std::string(result.rule->summary))
        << " | " << level_name(result.rule->strength) << " | " << to_string(result.status) << " | "
        << result.test_counts() << " | " << markdown_cell(result.detail) << " |\n";
  }
  if (!report.unmatched.empty()) {
    out << "\n## Tests that name no rule\n\n| test | result | detail |\n|---|---|---|\n";
    for (const auto& test : report.unmatched) {
      out << "| " << markdown_cell(test.full_name()) << " | " << outcome_name(test.outcome) << " | "
          << markdown_cell(test.message) << " |\n";
    }
  }
  if (!report.run_errors.empty()) {
    out << "\n## Failures outside any test\n\n";
    for (const auto& error : report.run_errors) out << "- " << markdown_cell(error) << '\n';
  }
}

bool matches_filter(const std::string& full_name, const std::string& filter) {
  const auto dash = filter.find('-');
  std::string positive = filter.substr(0, dash);
  const std::string negative = dash == std::string::npos ? "" : filter.substr(dash + 1);
  if (positive.empty()) positive = "*";
  return matches_any(full_name, positive) &&
         (negative.empty() || !matches_any(full_name, negative));
}

void write_json(std::ostream& out, const conformance_report& report) {
  // nlohmann-json: every string escaped (failure messages hold quotes,
  // newlines, paths), keys in this order.
  using json = nlohmann::ordered_json;
  const auto& facts = report.facts;
  const auto test_json = [](const test_record& test) {
    json t = {{"name", test.full_name()},
              {"outcome", outcome_name(test.outcome)},
              {"seconds", test.seconds}};
    if (!test.message.empty()) t["message"] = test.message;
    return t;
  };
  json doc = {{"format", "sluice-conformance-verdicts"},
              {"version", 1},
              {"facts",
               {{"sluice", facts.sluice_version},
                {"compiler", facts.compiler},
                {"backend", facts.backend},
                {"backend_version", facts.backend_version},
                {"devices", facts.device_names},
                {"no_device_reason", facts.no_device_reason},
                {"machine", facts.machine},
                {"date", iso_date(facts.when)}}},
              {"filter", report.filter},
              {"summary", report.summary()},
              {"exit_code", report.exit_code()},
              {"rules", json::array()},
              {"unmatched_tests", json::array()},
              {"run_errors", report.run_errors}};
  for (const auto& result : report.rules) {
    json tests = json::array();
    for (const auto& test : result.tests) tests.push_back(test_json(test));
    doc["rules"].push_back({{"id", result.rule->id},
                            {"summary", result.rule->summary},
                            {"level", level_name(result.rule->strength)},
                            {"verdict", to_string(result.status)},
                            {"detail", result.detail},
                            {"counts", result.test_counts()},
                            {"seconds", result.seconds},
                            {"tests", std::move(tests)}});
  }
  for (const auto& test : report.unmatched) doc["unmatched_tests"].push_back(test_json(test));
  // A message that is not UTF-8 (a test printed raw bytes) gets U+FFFD for
  // each bad byte instead of making dump() throw.
  out << doc.dump(2, ' ', false, json::error_handler_t::replace) << '\n';
}

}  // namespace sluice::tool
