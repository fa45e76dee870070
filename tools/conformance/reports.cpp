#include "conformance/reports.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <sstream>

namespace sluice::tool {

namespace {

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

}  // namespace

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
