// `sluice trace report <file> [--png <out.png>]`: the command around the
// reader and analysis of trace/ (kept apart so that the tests and
// the fuzz target compile the reader without the command line's CLI11).
#include "cli/trace_command.hpp"

#include "cli/arguments.hpp"
#include "cli/commands.hpp"
#include "trace/analyzer.hpp"
#include "trace/rank_alignment.hpp"
#include "trace/reader.hpp"
#include "trace/report.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace sluice::tool {

int trace_command(const std::vector<std::string>& args) {
  // args: report <file> [--png <out.png>]; --help was handled by the dispatcher.
  if (args.empty()) throw usage_error("no trace command given (the only one is 'report')");
  if (args[0] != "report") {
    std::string message = "unknown trace command '" + args[0] + "' (the only one is 'report')";
    // `sluice trace foo.json`: a file where the command belongs.
    const bool looks_like_a_file =
        access(args[0].c_str(), F_OK) == 0 ||
        (args[0].size() > 5 && args[0].compare(args[0].size() - 5, 5, ".json") == 0);
    if (looks_like_a_file) message += "; for a report on the file: sluice trace report " + args[0];
    throw usage_error(message);
  }
  // The options through CLI11, like every command's (arguments.hpp); the one
  // positional argument, the file, is what CLI11 leaves over.
  // Several files: the traces of several ranks (SLUICE_TRACE under an MPI
  // launcher), read into one timeline.
  std::vector<std::string> files;
  std::string png;
  parse_arguments(*find_command("trace"), std::vector<std::string>(args.begin() + 1, args.end()),
                  command_options{{{"--png", &png}}, {}}, [&files](const std::string& arg) {
                    if (arg.empty() || arg[0] == '-') return false;
                    files.push_back(arg);
                    return true;
                  });
  if (files.empty()) throw usage_error("'trace report' needs the trace file to read");
  for (const std::string& f : files)
    if (::access(f.c_str(), R_OK) != 0) {
      const int error = errno;
      std::cerr << "sluice trace report: cannot read " << f << ": " << std::strerror(error) << "\n";
      return 1;
    }
  std::string file = files.front();
  for (std::size_t i = 1; i < files.size(); ++i) file += ", " + files[i];
  try {
    trace_analyzer analyzer(!png.empty());
    if (files.size() == 1) {
      read_trace_file(file, analyzer);
    } else {
      read_rank_files(files, analyzer, nullptr);
      file = std::to_string(files.size()) + " files (" + file + ")";
    }
    std::cout << format_report(analyzer.finish(), file);
    if (!png.empty()) {
      analyzer.write_timeline_png(png);
      std::cout << "timeline: " << png << "\n";
    }
    return 0;
  } catch (const std::exception& e) {
    std::cout.flush();
    // Several files: the message names the file (read_rank_files).
    std::cerr << "sluice trace report: " << (files.size() == 1 ? file + ": " : std::string())
              << e.what() << "\n";
    return 1;
  }
}

}  // namespace sluice::tool
