// sluice-<backend>: the `sluice` command for one backend. Linked with
// sluice::<backend> and that backend's conformance tests; the dispatcher
// `sluice` (dispatcher.cpp) picks one of these and execs it.
#include "conformance_runner.hpp"
#include "fault.hpp"
#include "info.hpp"
#include "self_path.hpp"

#include <sluice/sluice.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

//! A mistake on the command line (exit code 2, like every other error).
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

const char* const main_help =
    "usage: sluice [--backend host|cuda|hip] <command> [options]\n"
    "\n"
    "commands:\n"
    "  info          backend, devices, stream priorities, stream limits, link matrix\n"
    "  conformance   run the conformance suite, one line per rule of docs/semantics.md\n"
    "  backends      list the backends that were built (dispatcher only)\n"
    "\n"
    "'sluice <command> --help' describes each command's options. See docs/tool.md.\n";

const char* const info_help =
    "usage: sluice [--backend NAME] info [--device-count]\n"
    "\n"
    "Prints the backend and its version, the devices, each device's stream\n"
    "priority range and the native value of the low/normal/high levels, the\n"
    "independent-stream limit, and the link matrix between devices.\n"
    "\n"
    "  --device-count   print only the number of devices\n";

const char* const conformance_help =
    "usage: sluice [--backend NAME] conformance [options]\n"
    "\n"
    "Runs the conformance suite in this process and prints one line per rule:\n"
    "PASS, FAIL (first failure), SKIP (reason), NOT OBSERVED (reason; MAY rules\n"
    "only), NO TEST, or NOT RUN (filtered out). Exit code 0 when no rule failed\n"
    "and, without --filter, every rule has a test; 1 otherwise; 2 on errors.\n"
    "\n"
    "  --filter PATTERN   run only matching tests (gtest syntax, e.g. '*EVT_*:*HOST_*')\n"
    "  --junit FILE       write JUnit XML, one testcase per rule\n"
    "  --markdown FILE    write a Markdown report (machine facts and the rule table)\n"
    "  --list             list the tests of each rule; run nothing\n"
    "  --verbose          show gtest's own output for every test\n"
    "  --gtest_*          passed to GoogleTest unchanged (e.g. --gtest_repeat=10)\n"
    "\n"
    "Missing directories of the report files are created.\n";

//! "--name=value" or "--name value"; advances i past the value.
bool take_value(const std::vector<std::string>& args, std::size_t& i, const char* name,
                std::string& value) {
  const std::string& arg = args[i];
  const std::size_t length = std::strlen(name);
  if (arg.compare(0, length, name) != 0) return false;
  if (arg.size() > length && arg[length] == '=') {
    value = arg.substr(length + 1);
  } else if (arg.size() == length) {
    if (i + 1 >= args.size()) throw usage_error(std::string(name) + " needs a value");
    value = args[++i];
  } else {
    return false;
  }
  if (value.empty()) throw usage_error(std::string(name) + " needs a value");
  return true;
}

//! Parses one option of `sluice conformance`; false when args[i] is none of them.
bool conformance_option(const std::vector<std::string>& args, std::size_t& i,
                        sluice::tool::conformance_options& options) {
  const std::string& arg = args[i];
  if (arg == "--list") {
    options.list = true;
  } else if (arg == "--verbose") {
    options.verbose = true;
  } else if (arg.rfind("--gtest_", 0) == 0) {
    options.gtest_arguments.push_back(arg);
  } else {
    return take_value(args, i, "--filter", options.filter) ||
           take_value(args, i, "--junit", options.junit_path) ||
           take_value(args, i, "--markdown", options.markdown_path);
  }
  return true;
}

int run(const std::string& program, const std::vector<std::string>& args) {
  if (args.empty()) throw usage_error("no command given\n" + std::string(main_help));
  const std::string& command = args[0];
  if (command == "--help" || command == "-h" || command == "help") {
    std::cout << main_help;
    return 0;
  }
  if (command == "--version") {
    std::cout << "sluice " << SLUICE_VERSION_STRING << " (" << sluice::backend_name()
              << " backend)\n";
    return 0;
  }

  sluice::tool::info_options info;
  sluice::tool::conformance_options conformance;
  if (command != "info" && command != "conformance") {
    throw usage_error("unknown command '" + command + "' (try 'sluice --help')");
  }
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& arg = args[i];
    std::string backend;
    if (arg == "--help" || arg == "-h") {
      std::cout << (command == "info" ? info_help : conformance_help);
      return 0;
    }
    if (take_value(args, i, "--backend", backend)) {
      // The dispatcher removes --backend; it reaches here when this program is run directly.
      if (backend != sluice::backend_name()) {
        throw usage_error("this is the " + std::string(sluice::backend_name()) +
                          " backend's program; run 'sluice --backend " + backend + " " + command +
                          "' instead");
      }
    } else if (command == "info" && arg == "--device-count") {
      info.device_count_only = true;
    } else if (command == "conformance" && conformance_option(args, i, conformance)) {
      continue;
    } else {
      throw usage_error("unknown option '" + arg + "' for '" + command + "' (try 'sluice " +
                        command + " --help')");
    }
  }
  if (command == "info") return sluice::tool::run_info(info);
  return sluice::tool::run_conformance(program, conformance);
}

}  // namespace

int main(int argc, char** argv) {
  // ERR-2's child (tests/conformance/fault/fault.hpp): this program started again.
  if (sluice::conformance::fault_child_requested()) return sluice::conformance::fault_child_main();
  if (sluice::tool::is_death_test_child(argc, argv)) {
    return sluice::tool::run_death_test_child(argc, argv);
  }
  // Line by line even into a pipe: a run that hangs and is killed still shows
  // every failure printed before the hang.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  try {
    return run(sluice::tool::self_path(argv[0]), std::vector<std::string>(argv + 1, argv + argc));
  } catch (const sluice::error& e) {
    std::cerr << "sluice: error: " << e.what() << " [" << sluice::to_string(e.code()) << "]\n";
  } catch (const std::exception& e) {
    std::cerr << "sluice: error: " << e.what() << '\n';
  }
  return 2;
}
