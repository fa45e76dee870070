// sluice: the dispatcher. Each backend has its own program, sluice-<backend>,
// linked with that backend (a program links exactly one). This one finds
// them next to itself, picks one and execs it:
//
//   sluice [--backend host|cuda|hip] <info|conformance> [options]
//   sluice backends
//   sluice trace report <file>   (no backend: reads a trace file)
//   sluice <command> --help      (every command: its help from commands.hpp)
//
// Choice: --backend, else $SLUICE_BACKEND, else the first GPU backend (cuda,
// then hip) that was built and reports at least one device, else host
// (backend_programs.cpp). docs/tool.md describes it.
#include "cli/arguments.hpp"
#include "cli/backend_programs.hpp"
#include "cli/commands.hpp"
#include "cli/matrix_command.hpp"
#include "cli/self_path.hpp"
#include "cli/trace_command.hpp"
#include "settings.hpp"

#include <sluice/version.hpp>

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice::tool::chosen_backend;
using sluice::tool::command_info;
using sluice::tool::default_backend;
using sluice::tool::dispatch_error;
using sluice::tool::list_backends;
using sluice::tool::program_of;
using sluice::tool::usage_error;

std::string main_help() {
  std::ostringstream out;
  out << "usage: sluice [--backend host|cuda|hip] <command> [options]\n\n";
  sluice::tool::list_commands(out, false);
  out << "\n"
         "The backend: --backend NAME, else $SLUICE_BACKEND, else the first GPU backend\n"
         "(cuda, hip) that was built and has a device, else host. Each backend is a\n"
         "program of its own, sluice-<backend>, next to this one.\n"
         "'sluice <command> --help' (or 'sluice help <command>') describes each command.\n"
         "See docs/tool.md.\n";
  return out.str();
}

std::string own_directory(const char* argv0) {
  const std::string path = sluice::tool::self_path(argv0);
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

//! Runs the command line `args` (argv without the program); sets `command`
//! once the command is known, for the usage line of a usage error.
int dispatch(const std::string& directory, std::vector<std::string> args,
             const command_info*& command) {
  const auto requested = sluice::tool::take_backend_option(args);
  if (sluice::tool::answer_general_help(args, main_help(), "sluice")) return 0;
  const std::string& first = args[0];
  if (first == "--version") {
    std::cout << "sluice " << SLUICE_VERSION_STRING << '\n';
    return 0;
  }
  command = sluice::tool::find_command(first);
  if (command == nullptr)
    throw usage_error("unknown command '" + first + "' (try 'sluice --help')");
  // Help is the same for every command: its text from commands.hpp, before
  // the command runs or a backend is chosen.
  if (sluice::tool::asks_for_help(args, 1)) {
    std::cout << command->help;
    return 0;
  }
  const std::string name = command->name;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  // `sluice trace report <file>` reads a file: no backend involved.
  if (name == "trace") return sluice::tool::trace_command(rest);
  // `sluice conformance matrix A.json B.json ...` reads verdict files: no backend either.
  if (name == "conformance" && !rest.empty() && rest[0] == "matrix")
    return sluice::tool::matrix_command(std::vector<std::string>(rest.begin() + 1, rest.end()));

  std::optional<sluice::tool::backend_choice> explicit_choice;
  const std::string environment = sluice::detail::settings::command_backend();  // empty: unset
  if (requested) {
    explicit_choice = chosen_backend(directory, *requested, "--backend");
  } else if (!environment.empty()) {
    explicit_choice = chosen_backend(directory, environment, "SLUICE_BACKEND");
  }
  if (name == "backends") {
    sluice::tool::parse_arguments(*command, rest, {});  // no options
    return list_backends(directory, explicit_choice);
  }

  const sluice::tool::backend_choice chosen =
      explicit_choice ? *explicit_choice : default_backend(directory);
  std::string program = program_of(directory, chosen.backend);
  if (name == "bench") {
    // `sluice bench p2p|comm|graph`: its own program, sluice-bench-<name>-<backend>,
    // next to this one. Its options through CLI11 like every command's
    // (arguments.hpp); the bench program gets them back in its own
    // --name=value form.
    if (rest.empty()) throw usage_error("no bench named (p2p, comm or graph)");
    std::string bench = rest[0];
    std::vector<std::pair<const char*, std::string>> options;
    // `bench p2p --strided`: the strided bench, sluice-bench-p2p-strided-<backend>.
    const auto strided = std::find(rest.begin() + 1, rest.end(), std::string("--strided"));
    bool same_device = false;
    std::vector<std::pair<const char*, bool*>> flags;
    if (bench == "p2p" && strided != rest.end()) {
      rest.erase(strided);
      bench = "p2p-strided";
      options = {
          {"--max-side", ""}, {"--trials", ""}, {"--reps", ""}, {"--json", ""}, {"--csv", ""}};
      flags = {{"--same-device", &same_device}};
    } else if (bench == "p2p")
      options = {{"--max-mib", ""}, {"--trials", ""}, {"--json", ""}, {"--csv", ""}};
    else if (bench == "comm")
      options = {{"--min-bytes", ""}, {"--max-bytes", ""}, {"--iters", ""},  {"--warmup", ""},
                 {"--trials", ""},    {"--ops", ""},       {"--engine", ""}, {"--buffers", ""},
                 {"--json", ""},      {"--csv", ""},       {"--png", ""}};
    else if (bench == "graph")
      options = {{"--batches", ""}, {"--launches", ""}, {"--json", ""}, {"--csv", ""}};
    else
      throw usage_error("unknown bench '" + bench + "' (p2p, comm or graph)");
    std::vector<std::pair<const char*, std::string*>> bound;
    for (auto& [option, value] : options) bound.push_back({option, &value});
    sluice::tool::parse_arguments(*command, std::vector<std::string>(rest.begin() + 1, rest.end()),
                                  {bound, flags});
    program = directory + "/sluice-bench-" + bench + "-" + chosen.backend;
    if (access(program.c_str(), X_OK) != 0)
      throw dispatch_error(
          bench == "p2p-strided" ? "no strided P2P bench for the " + chosen.backend + " backend (" +
                                       program + " was not built; it is built with the benches)"
          : bench == "p2p"
              ? "no P2P bench for the " + chosen.backend + " backend (" + program +
                    " was not built; it exists for cuda and hip, built with "
                    "-DSLUICE_ENABLE_CUDA=ON or -DSLUICE_ENABLE_HIP=ON and the benches)"
          : bench == "graph"
              ? "no graph bench for the " + chosen.backend + " backend (" + program +
                    " was not built; it is built with the benches for every backend)"
              : "no comm bench for the " + chosen.backend + " backend (" + program +
                    " was not built; it exists where sluice::comm was built: MPI found, "
                    "and the benches)");
    args.clear();
    for (const auto& [option, value] : options)
      if (!value.empty()) args.push_back(std::string(option) + "=" + value);
    if (same_device) args.push_back("--same-device");
  }
  std::vector<char*> child_argv;
  child_argv.push_back(const_cast<char*>(program.c_str()));
  for (auto& arg : args) child_argv.push_back(arg.data());
  child_argv.push_back(nullptr);
  execv(program.c_str(), child_argv.data());
  throw dispatch_error("cannot run " + program + ": " + std::strerror(errno));
}

}  // namespace

int main(int argc, char** argv) {
  const command_info* command = nullptr;
  try {
    return dispatch(own_directory(argv[0]), std::vector<std::string>(argv + 1, argv + argc),
                    command);
  } catch (const usage_error& e) {
    sluice::tool::print_usage_error(std::cerr, e.what(), command);
  } catch (const std::exception& e) {
    std::cerr << "sluice: error: " << e.what() << '\n';
  }
  return 2;
}
