// sluice-<backend>: the `sluice` command for one backend. Linked with
// sluice::<backend> and that backend's conformance tests; the dispatcher
// `sluice` (dispatcher.cpp) picks one of these and execs it.
#include "cli/arguments.hpp"
#include "cli/commands.hpp"
#include "cli/info.hpp"
#include "cli/self_path.hpp"
#include "conformance/runner.hpp"
#include "fault.hpp"

#include <sluice/sluice.hpp>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice::tool::command_info;
using sluice::tool::usage_error;

//! "sluice-host"
std::string program_name() { return std::string("sluice-") + sluice::backend_name(); }

std::string main_help() {
  std::ostringstream out;
  out << "usage: " << program_name() << " [--backend " << sluice::backend_name()
      << "] <command> [options]\n\n";
  sluice::tool::list_commands(out, true);
  out << "\nThis is the " << sluice::backend_name()
      << " backend's program. 'sluice', next to it, picks a backend and runs\n"
         "its program; it also has the commands backends, trace and bench.\n"
         "'sluice <command> --help' describes each command's options. See docs/tool.md.\n";
  return out.str();
}

//! --backend: accepted as the launcher `sluice` accepts it, anywhere on the
//! command line, when it names this program's own backend.
void check_backend_option(std::vector<std::string>& args) {
  const auto backend = sluice::tool::take_backend_option(args);
  if (!backend || *backend == sluice::backend_name()) return;
  if (!sluice::tool::is_known_backend(*backend))
    throw usage_error(sluice::tool::unknown_backend_message("--backend", *backend));
  throw usage_error("this is " + program_name() + ", the " + sluice::backend_name() +
                    " backend's program: it runs only --backend " + sluice::backend_name() +
                    "; for the " + *backend + " backend run 'sluice --backend " + *backend +
                    " ...' (or sluice-" + *backend + ")");
}

//! Runs the command line `args` (argv without the program); sets `command`
//! once the command is known, for the usage line of a usage error.
int run(const std::string& program, std::vector<std::string> args, const command_info*& command) {
  check_backend_option(args);
  if (sluice::tool::answer_general_help(args, main_help(), program_name())) return 0;
  const std::string& first = args[0];
  if (first == "--version") {
    std::cout << "sluice " << SLUICE_VERSION_STRING << " (" << sluice::backend_name()
              << " backend)\n";
    return 0;
  }
  command = sluice::tool::find_command(first);
  if (command == nullptr || !command->backend_program) {
    const std::string hint = command == nullptr ? "try '" + program_name() + " --help'"
                                                : "a command of 'sluice', the launcher";
    command = nullptr;
    throw usage_error("unknown command '" + first + "' (" + hint + ")");
  }
  // The same help as the dispatcher's (commands.hpp).
  if (sluice::tool::asks_for_help(args, 1)) {
    std::cout << command->help;
    return 0;
  }

  const std::string name = command->name;
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (name == "info") {
    sluice::tool::info_options info;
    sluice::tool::parse_arguments(*command, rest,
                                  {{}, {{"--device-count", &info.device_count_only}}});
    return sluice::tool::run_info(info);
  }
  sluice::tool::conformance_options conformance;
  sluice::tool::parse_arguments(
      *command, rest,
      {{{"--filter", &conformance.filter},
        {"--junit", &conformance.junit_path},
        {"--markdown", &conformance.markdown_path},
        {"--json", &conformance.json_path}},
       {{"--list", &conformance.list}, {"--verbose", &conformance.verbose}}},
      [&](const std::string& arg) {  // --gtest_*: for GoogleTest, unchanged
        if (arg.rfind("--gtest_", 0) != 0) return false;
        conformance.gtest_arguments.push_back(arg);
        return true;
      });
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
  const command_info* command = nullptr;
  try {
    return run(sluice::tool::self_path(argv[0]), std::vector<std::string>(argv + 1, argv + argc),
               command);
  } catch (const usage_error& e) {
    sluice::tool::print_usage_error(std::cerr, e.what(), command);
  } catch (const sluice::error& e) {
    std::cerr << "sluice: error: " << e.what() << " [" << sluice::to_string(e.code()) << "]\n";
  } catch (const std::exception& e) {
    std::cerr << "sluice: error: " << e.what() << '\n';
  }
  return 2;
}
