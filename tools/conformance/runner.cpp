#include "conformance/runner.hpp"

#include "cli/facts.hpp"
#include "conformance/reports.hpp"
#include "conformance/test_filter.hpp"
#include "conformance/verdicts.hpp"
#include "watchdog.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

namespace sluice::tool {

namespace {

bool starts_with(const std::string& text, const char* prefix) { return text.rfind(prefix, 0) == 0; }

//! "/home/me/sluice/tests/conformance/events.cpp" -> "tests/conformance/events.cpp"
std::string short_path(const char* path) {
  if (path == nullptr) return "unknown file";
  const std::string full(path);
  const auto tests = full.rfind("/tests/");
  if (tests != std::string::npos) return full.substr(tests + 1);
  const auto slash = full.rfind('/');
  return slash == std::string::npos ? full : full.substr(slash + 1);
}

std::string location(const testing::TestPartResult& part) {
  std::string text = short_path(part.file_name());
  if (part.line_number() >= 0) text += ":" + std::to_string(part.line_number());
  return text + ": ";
}

//! The first failure of a result, or its skip reason.
std::string first_message(const testing::TestResult& result, bool want_failure) {
  for (int i = 0; i < result.total_part_count(); ++i) {
    const auto& part = result.GetTestPartResult(i);
    if (want_failure && part.failed()) return location(part) + part.message();
    if (!want_failure && part.skipped()) return part.message();
  }
  return {};
}

void collect_failures(const testing::TestResult& result, const std::string& where,
                      std::vector<std::string>& errors) {
  for (int i = 0; i < result.total_part_count(); ++i) {
    const auto& part = result.GetTestPartResult(i);
    if (part.failed()) errors.push_back(where + ": " + location(part) + part.message());
  }
}

bool is_disabled(const std::string& suite, const std::string& name) {
  return starts_with(suite, "DISABLED_") || starts_with(name, "DISABLED_");
}

//! Every registered test, in registration order. After a run, tests that ran
//! carry their result; before one, `filter` decides which would run.
std::vector<test_record> registered_tests(bool after_run, const std::string& filter) {
  std::vector<test_record> tests;
  const auto& unit = *testing::UnitTest::GetInstance();
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const auto& suite = *unit.GetTestSuite(s);
    for (int t = 0; t < suite.total_test_count(); ++t) {
      const auto& info = *suite.GetTestInfo(t);
      test_record record;
      record.suite = info.test_suite_name();
      record.name = info.name();
      const bool disabled = is_disabled(record.suite, record.name);
      const bool runs =
          after_run ? info.should_run() : !disabled && matches_filter(record.full_name(), filter);
      if (!runs) {
        record.outcome = disabled ? test_outcome::disabled : test_outcome::filtered;
      } else if (after_run) {
        const auto& result = *info.result();
        record.seconds = static_cast<double>(result.elapsed_time()) / 1000.0;
        if (result.Failed()) {
          record.outcome = test_outcome::failed;
          record.message = first_message(result, true);
        } else if (result.Skipped()) {
          record.outcome = test_outcome::skipped;
          record.message = first_message(result, false);
        }
      }
      tests.push_back(std::move(record));
    }
  }
  return tests;
}

std::vector<std::string> failures_outside_tests() {
  std::vector<std::string> errors;
  const auto& unit = *testing::UnitTest::GetInstance();
  collect_failures(unit.ad_hoc_test_result(), "test program", errors);
  for (int s = 0; s < unit.total_test_suite_count(); ++s) {
    const auto& suite = *unit.GetTestSuite(s);
    collect_failures(suite.ad_hoc_test_result(), std::string("suite ") + suite.name(), errors);
  }
  return errors;
}

//! On a terminal, shows which test is running (so a hang names its test);
//! prints nothing when stderr is a file or a pipe.
class progress_line : public testing::EmptyTestEventListener {
 public:
  explicit progress_line(int total) : total_(total) {}

  void OnTestStart(const testing::TestInfo& info) override {
    ++started_;
    std::fprintf(stderr, "\r\033[K[%d/%d] %s.%s", started_, total_, info.test_suite_name(),
                 info.name());
    std::fflush(stderr);
  }
  void OnTestProgramEnd(const testing::UnitTest&) override {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  int total_;
  int started_ = 0;
};

void write_file(const std::string& path, void (*writer)(std::ostream&, const conformance_report&),
                const conformance_report& report) {
  const auto parent = std::filesystem::path(path).parent_path();
  std::error_code ignored;  // a missing directory shows as the failure to open below
  if (!parent.empty()) std::filesystem::create_directories(parent, ignored);
  std::ofstream file(path);
  if (file) writer(file, report);
  file.close();
  if (!file) throw std::runtime_error("cannot write '" + path + "'");
}

void write_reports(const conformance_options& options, const conformance_report& report) {
  if (!options.junit_path.empty()) write_file(options.junit_path, write_junit, report);
  if (!options.markdown_path.empty()) write_file(options.markdown_path, write_markdown, report);
  if (!options.json_path.empty()) write_file(options.json_path, write_json, report);
}

void print_list(const std::vector<test_record>& tests) {
  const auto report = summarize(machine_facts{}, tests, {}, "");
  for (const auto& result : report.rules) {
    std::cout << result.rule->id << ' ' << level_name(result.rule->strength) << "  "
              << result.rule->summary << '\n';
    if (result.tests.empty()) std::cout << "    (no test)\n";
    for (const auto& test : result.tests) {
      std::cout << "    " << test.full_name();
      if (test.outcome == test_outcome::filtered) std::cout << "  (filtered out)";
      if (test.outcome == test_outcome::disabled) std::cout << "  (disabled)";
      std::cout << '\n';
    }
  }
  if (!report.unmatched.empty()) {
    std::cout << "tests that name no rule:\n";
    for (const auto& test : report.unmatched) std::cout << "    " << test.full_name() << '\n';
  }
}

}  // namespace

bool is_death_test_child(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (starts_with(argv[i], "--gtest_internal_run_death_test")) return true;
  }
  return false;
}

int run_death_test_child(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}

int run_conformance(const std::string& program, const conformance_options& options) {
  // gtest keeps these arguments and passes them again to the copies of this
  // program that it starts for death tests (the "threadsafe" style): they
  // must lead straight back to gtest, which is_death_test_child() sees to.
  std::vector<std::string> arguments = {program};
  if (!options.filter.empty()) arguments.push_back("--gtest_filter=" + options.filter);
  arguments.insert(arguments.end(), options.gtest_arguments.begin(), options.gtest_arguments.end());
  std::vector<char*> argv;
  argv.reserve(arguments.size() + 1);
  for (auto& argument : arguments) argv.push_back(argument.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(arguments.size());
  testing::InitGoogleTest(&argc, argv.data());
  if (argc > 1) throw std::invalid_argument(std::string("unknown gtest option '") + argv[1] + "'");

  if (options.list) {
    print_list(registered_tests(false, options.filter));
    return 0;
  }

  const machine_facts facts = collect_facts();
  std::cout << "sluice conformance\n";
  print_facts(std::cout, facts);
  if (facts.device_names.empty()) {
    // Nothing can run without a device; say so instead of reporting every rule
    // as failed. The reports are still written (CI reads them): every rule
    // NOT RUN, with the reason.
    std::cout << "\n"
              << facts.no_device_reason
              << " on this machine: the conformance suite needs one; nothing ran\n";
    const auto report = summarize_not_run(facts, registered_tests(false, options.filter),
                                          facts.no_device_reason, options.filter);
    write_reports(options, report);
    return 3;
  }
  const auto planned = registered_tests(false, options.filter);
  const int selected =
      static_cast<int>(std::count_if(planned.begin(), planned.end(), [](const test_record& t) {
        return t.outcome != test_outcome::filtered && t.outcome != test_outcome::disabled;
      }));
  std::cout << "  tests:    " << selected << " of " << planned.size() << " selected";
  if (!options.filter.empty()) std::cout << " (filter: " << options.filter << ')';
  std::cout << "\n\n" << std::flush;

  auto& listeners = testing::UnitTest::GetInstance()->listeners();
  if (!options.verbose) {
    delete listeners.Release(listeners.default_result_printer());
    if (isatty(STDERR_FILENO) != 0) listeners.Append(new progress_line(selected));
  }
  sluice::conformance::install_watchdog();  // a hanging test is named, then exit 124
  const int gtest_status = RUN_ALL_TESTS();

  auto errors = failures_outside_tests();
  const auto tests = registered_tests(true, options.filter);
  const bool any_test_failed = std::any_of(tests.begin(), tests.end(), [](const test_record& t) {
    return t.outcome == test_outcome::failed;
  });
  const bool any_test_ran = std::any_of(tests.begin(), tests.end(), [](const test_record& t) {
    return t.outcome == test_outcome::passed || t.outcome == test_outcome::failed ||
           t.outcome == test_outcome::skipped;
  });
  // A filter that matches nothing (or a --gtest_ option that makes gtest print
  // its help instead of running) must not pass quietly.
  if (!any_test_ran) {
    errors.push_back("no test ran: the filter matches no test, or GoogleTest rejected an option");
  }
  if (gtest_status != 0 && !any_test_failed && errors.empty()) {
    errors.push_back("gtest reported a failure that no test shows (rerun with --verbose)");
  }
  const auto report = summarize(facts, tests, std::move(errors), options.filter);
  print_table(std::cout, report);
  std::cout << std::flush;
  write_reports(options, report);
  return report.exit_code();
}

}  // namespace sluice::tool
