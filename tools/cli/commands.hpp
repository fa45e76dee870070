// The commands of `sluice` and what the dispatcher (dispatcher.cpp) and the
// backend programs (backend_main.cpp) share about them: one help text per
// command, the handling of --help, and the --backend option.
//
// Help is handled here, the same way for every command, before a command
// runs or a backend is chosen: `sluice <command> ... --help` (or -h) and
// `sluice help <command>` print the command's text from `commands` to
// standard output and exit 0. A usage error (usage_error) prints
// "sluice: error: <what>" and the command's usage line to standard error and
// exits 2.
//
// Each command's options are parsed by CLI11 (arguments.hpp, parse_arguments).
#pragma once

#include <cstring>
#include <iostream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

namespace sluice::tool {

//! A mistake on the command line: exit status 2, the command's usage line after the message.
struct usage_error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

//! Every backend sluice knows, GPU backends first in order of preference.
inline const char* const known_backends[] = {"cuda", "hip", "host"};

inline bool is_known_backend(const std::string& name) {
  for (const char* known : known_backends) {
    if (name == known) return true;
  }
  return false;
}

struct command_info {
  const char* name;    //!< the first argument: "info"
  const char* listed;  //!< how `sluice --help` lists it: "trace report <file>"
  const char* summary;
  //! What `sluice <name> --help` prints; its first line is the usage line.
  const char* help;
  //! Run by sluice-<backend> (the dispatcher execs it); otherwise the dispatcher runs it.
  bool backend_program;
};

inline const command_info commands[] = {
    {"info", "info", "backend, devices, stream priorities, stream limits, link matrix",
     "usage: sluice [--backend NAME] info [--device-count]\n"
     "\n"
     "Prints the backend and its version, the devices, each device's stream\n"
     "priority range and the native value of the low/normal/high levels, the\n"
     "independent-stream limit, and the link matrix between devices. A GPU\n"
     "backend without a usable device says so on its 'devices:' line.\n"
     "\n"
     "  --device-count   print only the number of devices\n",
     true},
    {"conformance", "conformance",
     "run the conformance suite, one line per rule of docs/semantics.md; 'conformance "
     "matrix A.json B.json ...': the rule x backend table of verdict files",
     "usage: sluice [--backend NAME] conformance [options]\n"
     "\n"
     "Runs the conformance suite in this process and prints one line per rule:\n"
     "PASS, FAIL (first failure), SKIP (reason), NOT OBSERVED (reason; MAY rules\n"
     "only), NO TEST, or NOT RUN (filtered out). Exit status 0 when no rule failed\n"
     "and, without --filter, every rule has a test; 1 otherwise; 2 on errors; 3\n"
     "when the backend has no device here (nothing ran; the reports still are\n"
     "written, every rule NOT RUN with the reason).\n"
     "\n"
     "  --filter PATTERN   run only matching tests (gtest syntax, e.g. '*EVT_*:*HOST_*')\n"
     "  --junit FILE       write JUnit XML, one testcase per rule\n"
     "  --markdown FILE    write a Markdown report (machine facts and the rule table)\n"
     "  --json FILE        write the verdicts as JSON (facts, each rule with its tests)\n"
     "  --list             list the tests of each rule; run nothing\n"
     "  --verbose          show gtest's own output for every test\n"
     "  --gtest_*          passed to GoogleTest unchanged (e.g. --gtest_repeat=10)\n"
     "\n"
     "Missing directories of the report files are created.\n"
     "\n"
     "usage: sluice conformance matrix A.json B.json ... [--markdown OUT.md]\n"
     "\n"
     "Reads verdict files of 'conformance --json' (one per run; needs no\n"
     "backend) and prints one row per rule, one column per file (headed by the\n"
     "backend and the file name without .json), plus 'hip on AMD' (not run: no\n"
     "AMD GPU). Rows whose verdicts differ between the runs are marked '*'.\n"
     "Exit status 0 when printed, 1 for an unreadable or malformed file (named),\n"
     "2 for a usage error.\n"
     "\n"
     "  --markdown FILE    also write the table as Markdown\n",
     true},
    {"backends", "backends", "list the backends that were built and which one is the default",
     "usage: sluice [--backend NAME] backends\n"
     "\n"
     "Lists the backend programs next to this one (sluice-cuda, sluice-hip,\n"
     "sluice-host): not built, or the number of devices each reports. Then the\n"
     "backend that 'sluice' runs and why: --backend NAME, else $SLUICE_BACKEND,\n"
     "else the first GPU backend (cuda, hip) that was built and has a device,\n"
     "else host.\n",
     false},
    {"trace", "trace report <file>...",
     "overlap, idle gaps, waits and critical path of a sluice trace",
     "usage: sluice trace report <trace.json>... [--png <timeline.png>]\n"
     "\n"
     "Prints per-stream busy time, pairwise overlap, idle gaps, waits and the\n"
     "critical path of a trace written by sluice (SLUICE_TRACE=<file>, or\n"
     "trace_begin / trace_end), and sluice::comm's operations. Several files:\n"
     "the traces of several ranks (one per rank), on one timeline, streams as\n"
     "r<rank>/d<device>/s<id>, overlap per rank. Needs no backend.\n"
     "\n"
     "  --png FILE   also draw the timeline with gnuplot (Debian: gnuplot-nox)\n"
     "\n"
     "Exit status 0 when the report was printed, 1 for an unreadable or\n"
     "malformed file or a gnuplot failure, 2 for a usage error.\n",
     false},
    {"bench", "bench p2p|comm|graph [options]",
     "peer copies (CUDA, 2+ GPUs), communication (under mpirun) or graph launches, sluice next "
     "to the raw calls",
     "usage: sluice [--backend NAME] bench p2p [--max-mib=N] [--trials=N] [--json=FILE] "
     "[--csv=FILE]\n"
     "       sluice [--backend NAME] bench p2p --strided [--max-side=N] [--trials=N] [--reps=N]\n"
     "              [--same-device] [--json=FILE] [--csv=FILE]\n"
     "       mpirun -np N sluice [--backend NAME] bench comm [--min-bytes=N] [--max-bytes=N]\n"
     "              [--iters=N] [--warmup=N] [--trials=N] [--ops=LIST]\n"
     "              [--engine=mpi|nccl|automatic] [--buffers=device|pinned|host]\n"
     "              [--json=FILE] [--csv=FILE] [--png=FILE]\n"
     "       sluice [--backend NAME] bench graph [--batches=N] [--launches=M] [--json=FILE]\n"
     "              [--csv=FILE]\n"
     "\n"
     "bench comm runs sluice-bench-comm-<backend> (built with sluice::comm, when\n"
     "MPI was found) on every rank, each on device (node-local rank % devices):\n"
     "sendrecv, all_reduce, broadcast, all_gather through sluice::comm next to\n"
     "the raw calls in the same run (blocking MPI; for device buffers with the\n"
     "mpi engine a hand-written pinned staging loop; for nccl raw NCCL), as\n"
     "nccl-tests reports them (time, algbw, busbw; ratio = raw / sluice time;\n"
     "data checked). Buffers: device memory by default on the GPU backends.\n"
     "--png draws bus bandwidth and time against size (gnuplot). Exit status\n"
     "77: the engine is not in this build. docs/comm.md.\n"
     "\n"
     "bench p2p:\n"
     "Runs sluice-bench-p2p-<backend> from this directory (built for CUDA only,\n"
     "-DSLUICE_ENABLE_CUDA=ON): peer copies through sluice next to the raw\n"
     "vendor calls, in the same run, for every ordered pair of devices. Needs\n"
     "2 or more devices (exit status 77 otherwise).\n"
     "\n"
     "  --max-mib=N    largest copy in MiB (default 1024, at least 2)\n"
     "  --trials=N     trials per side and size (default 5)\n"
     "  --json=FILE    also write the rows as JSON\n"
     "  --csv=FILE     also write the rows as CSV (scripts/p2p-plot draws them)\n"
     "\n"
     "bench p2p --strided:\n"
     "Runs sluice-bench-p2p-strided-<backend> (built for every backend): the x,\n"
     "y and z faces of cubes of doubles (side 64 up to --max-side) and one batch\n"
     "of the six faces, sluice's strided copy_peer and copy_peer_batch next to\n"
     "the raw 3-D peer copy and a pack kernel + peer copy + unpack kernel (CUDA;\n"
     "on the host backend they are reported as not available), ratios to the\n"
     "best raw method, the path each sluice copy took, the data checked, and\n"
     "the verdicts of docs/tool.md's targets. Exit status 77: fewer than 2\n"
     "devices (1 with --same-device).\n"
     "\n"
     "  --max-side=N   largest cube side (default 512 on a GPU, 128 on the host backend)\n"
     "  --trials=N     trials per method and row (default 5)\n"
     "  --reps=N       copies per trial (default 20)\n"
     "  --same-device  both ends on device 0 (the raw 3-D copy: cudaMemcpy3DAsync)\n"
     "\n"
     "bench graph:\n"
     "Runs sluice-bench-graph-<backend> (built for the backends with graphs: the\n"
     "host backend): a 64-operation chain and a 4-branch diamond of small fills\n"
     "and copies, each launched as a graph next to the same operations enqueued\n"
     "one by one, in the same run: the calling thread's cost per iteration, the\n"
     "end-to-end time, the launch's fraction of the eager enqueues against the\n"
     "target, the data checked. docs/graphs.md.\n"
     "\n"
     "  --batches=N    timed batches per side (default 50)\n"
     "  --launches=M   iterations per batch (default 20)\n",
     false},
};

//! The command named `name`, or nullptr.
inline const command_info* find_command(const std::string& name) {
  for (const auto& command : commands) {
    if (name == command.name) return &command;
  }
  return nullptr;
}

//! "usage: sluice [--backend NAME] info [--device-count]"
inline std::string usage_line(const command_info& command) {
  const char* end = std::strchr(command.help, '\n');
  return end == nullptr ? std::string(command.help) : std::string(command.help, end);
}

inline bool is_help_option(const std::string& arg) { return arg == "--help" || arg == "-h"; }

//! True when an argument from `first` on asks for help.
inline bool asks_for_help(const std::vector<std::string>& args, std::size_t first) {
  for (std::size_t i = first; i < args.size(); ++i) {
    if (is_help_option(args[i])) return true;
  }
  return false;
}

//! The start of every program's command line, the same for the dispatcher
//! and the backend programs: no command is a usage error showing `main_help`;
//! `help [COMMAND]`, `--help` or `-h` first prints `main_help` or the
//! command's help to stdout. Returns true when it printed help (exit 0).
//! `program` names the program in the hint of an unknown command.
inline bool answer_general_help(const std::vector<std::string>& args, std::string main_help,
                                const std::string& program) {
  if (args.empty()) {
    main_help.pop_back();  // print_usage_error ends the line
    throw usage_error("no command given\n" + main_help);
  }
  const std::string& first = args[0];
  if (first != "help" && !is_help_option(first)) return false;
  if (first == "help" && args.size() > 1) {
    const command_info* asked = find_command(args[1]);
    if (asked == nullptr)
      throw usage_error("unknown command '" + args[1] + "' (try '" + program + " --help')");
    std::cout << asked->help;
    return true;
  }
  std::cout << main_help;
  return true;
}

//! The command list of `sluice --help`: the commands a program runs itself or
//! dispatches (all of them for the dispatcher, `backend_program` ones for a
//! backend program).
inline void list_commands(std::ostream& out, bool backend_program_only) {
  out << "commands:\n";
  for (const auto& command : commands) {
    if (backend_program_only && !command.backend_program) continue;
    std::string listed = command.listed;
    listed += listed.size() < 14 ? std::string(14 - listed.size(), ' ') : std::string(2, ' ');
    out << "  " << listed << command.summary << '\n';
  }
}

//! Takes every "--backend NAME" and "--backend=NAME" out of args, wherever it
//! stands; returns the last NAME given. usage_error when a NAME is missing.
inline std::optional<std::string> take_backend_option(std::vector<std::string>& args) {
  std::optional<std::string> backend;
  std::vector<std::string> rest;
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "--backend") {
      if (i + 1 >= args.size() || args[i + 1].empty())
        throw usage_error("--backend needs a value (cuda, hip or host)");
      backend = args[++i];
    } else if (arg.rfind("--backend=", 0) == 0) {
      backend = arg.substr(std::strlen("--backend="));
      if (backend->empty()) throw usage_error("--backend needs a value (cuda, hip or host)");
    } else {
      rest.push_back(arg);
    }
  }
  args = std::move(rest);
  return backend;
}

//! "unknown backend 'x' (known: cuda, hip, host)"
inline std::string unknown_backend_message(const char* source, const std::string& name) {
  return std::string(source) + " names an unknown backend '" + name + "' (known: cuda, hip, host)";
}

//! How every program of the command reports a usage error: the message, then
//! the usage line of the command it concerns (when one is known).
inline void print_usage_error(std::ostream& err, const std::string& message,
                              const command_info* command) {
  err << "sluice: error: " << message << '\n';
  if (command != nullptr) err << usage_line(*command) << '\n';
}

}  // namespace sluice::tool
