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
// then hip) that was built and reports at least one device, else host.
// docs/tool.md describes it.
#include "cli/arguments.hpp"
#include "cli/commands.hpp"
#include "cli/matrix_command.hpp"
#include "cli/self_path.hpp"
#include "cli/trace_command.hpp"

#include <sluice/version.hpp>

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice::tool::command_info;
using sluice::tool::known_backends;
using sluice::tool::usage_error;

//! A device-count probe that has not answered after this long counts as "no devices".
constexpr int probe_timeout_ms = 60'000;

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

struct dispatch_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string own_directory(const char* argv0) {
  const std::string path = sluice::tool::self_path(argv0);
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

std::string program_of(const std::string& directory, const std::string& backend) {
  return directory + "/sluice-" + backend;
}

bool is_built(const std::string& directory, const std::string& backend) {
  return access(program_of(directory, backend).c_str(), X_OK) == 0;
}

//! Runs `sluice-<backend> info --device-count` and returns what it printed,
//! or nothing when it failed (no driver, no device, a crash, no answer).
std::optional<int> device_count(const std::string& program) {
  int pipe_ends[2];
  if (pipe(pipe_ends) != 0) return std::nullopt;
  const pid_t child = fork();
  if (child < 0) {
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    return std::nullopt;
  }
  if (child == 0) {
    dup2(pipe_ends[1], STDOUT_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
    close(pipe_ends[0]);
    close(pipe_ends[1]);
    const char* const argv[] = {program.c_str(), "info", "--device-count", nullptr};
    execv(program.c_str(), const_cast<char* const*>(argv));
    _exit(127);
  }
  close(pipe_ends[1]);
  std::string output;
  pollfd readable{pipe_ends[0], POLLIN, 0};
  bool timed_out = false;
  for (;;) {
    const int ready = poll(&readable, 1, probe_timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) {
      timed_out = true;
      break;
    }
    char chunk[64];
    const ssize_t got = read(pipe_ends[0], chunk, sizeof chunk);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    output.append(chunk, static_cast<std::size_t>(got));
  }
  close(pipe_ends[0]);
  if (timed_out) kill(child, SIGKILL);
  int status = 0;
  while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (timed_out || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return std::nullopt;
  char* end = nullptr;
  const long count = std::strtol(output.c_str(), &end, 10);
  if (end == output.c_str() || count < 0 || count > INT_MAX) return std::nullopt;
  return static_cast<int>(count);
}

struct choice {
  std::string backend;
  std::string reason;
};

choice default_backend(const std::string& directory) {
  for (const char* gpu : known_backends) {
    if (std::string(gpu) == "host" || !is_built(directory, gpu)) continue;
    const auto count = device_count(program_of(directory, gpu));
    if (count && *count > 0) return {gpu, "the first GPU backend built that has a device"};
  }
  if (is_built(directory, "host")) return {"host", "no GPU backend built that has a device"};
  throw dispatch_error("no sluice-<backend> program next to this one in " + directory);
}

choice chosen_backend(const std::string& directory, const std::string& requested,
                      const char* source) {
  if (!sluice::tool::is_known_backend(requested)) {
    throw dispatch_error(sluice::tool::unknown_backend_message(source, requested));
  }
  if (!is_built(directory, requested)) {
    throw dispatch_error("the " + requested + " backend was not built: no " +
                         program_of(directory, requested) + " (see 'sluice backends')");
  }
  return {requested, std::string("chosen by ") + source};
}

int list_backends(const std::string& directory, const std::optional<choice>& requested) {
  std::cout << "backends next to " << directory << ":\n";
  for (const char* backend : known_backends) {
    std::string name = backend;
    name.resize(6, ' ');
    std::cout << "  " << name;
    if (!is_built(directory, backend)) {
      std::cout << "not built\n";
      continue;
    }
    const auto count = device_count(program_of(directory, backend));
    std::cout << "sluice-" << backend << ", ";
    if (count) {
      std::cout << *count << (*count == 1 ? " device\n" : " devices\n");
    } else {
      std::cout << "cannot start (run 'sluice --backend " << backend << " info')\n";
    }
  }
  const choice chosen = requested ? *requested : default_backend(directory);
  std::cout << "default: " << chosen.backend << " (" << chosen.reason << ")\n";
  return 0;
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

  std::optional<choice> explicit_choice;
  const char* environment = std::getenv("SLUICE_BACKEND");
  if (requested) {
    explicit_choice = chosen_backend(directory, *requested, "--backend");
  } else if (environment != nullptr && *environment != '\0') {
    explicit_choice = chosen_backend(directory, environment, "SLUICE_BACKEND");
  }
  if (name == "backends") {
    sluice::tool::parse_arguments(*command, rest, {});  // no options
    return list_backends(directory, explicit_choice);
  }

  const choice chosen = explicit_choice ? *explicit_choice : default_backend(directory);
  std::string program = program_of(directory, chosen.backend);
  if (name == "bench") {
    // `sluice bench p2p|comm`: its own program, sluice-bench-<name>-<backend>,
    // next to this one. Its options through CLI11 like every command's
    // (arguments.hpp); the bench program gets them back in its own
    // --name=value form.
    if (rest.empty()) throw usage_error("no bench named (p2p or comm)");
    const std::string bench = rest[0];
    std::vector<std::pair<const char*, std::string>> options;
    if (bench == "p2p")
      options = {{"--max-mib", ""}, {"--trials", ""}, {"--json", ""}, {"--csv", ""}};
    else if (bench == "comm")
      options = {{"--min-bytes", ""}, {"--max-bytes", ""}, {"--iters", ""},  {"--warmup", ""},
                 {"--trials", ""},    {"--ops", ""},       {"--engine", ""}, {"--buffers", ""},
                 {"--json", ""},      {"--csv", ""},       {"--png", ""}};
    else
      throw usage_error("unknown bench '" + bench + "' (p2p or comm)");
    std::vector<std::pair<const char*, std::string*>> bound;
    for (auto& [option, value] : options) bound.push_back({option, &value});
    sluice::tool::parse_arguments(*command, std::vector<std::string>(rest.begin() + 1, rest.end()),
                                  {bound, {}});
    program = directory + "/sluice-bench-" + bench + "-" + chosen.backend;
    if (access(program.c_str(), X_OK) != 0)
      throw dispatch_error(
          bench == "p2p" ? "no P2P bench for the " + chosen.backend + " backend (" + program +
                               " was not built; it exists for cuda and hip, built with "
                               "-DSLUICE_ENABLE_CUDA=ON or -DSLUICE_ENABLE_HIP=ON and the benches)"
                         : "no comm bench for the " + chosen.backend + " backend (" + program +
                               " was not built; it exists where sluice::comm was built: MPI found, "
                               "and the benches)");
    args.clear();
    for (const auto& [option, value] : options)
      if (!value.empty()) args.push_back(std::string(option) + "=" + value);
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
