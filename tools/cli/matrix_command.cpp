// `sluice conformance matrix A.json B.json ... [--markdown OUT.md]`: the
// command around the reader of conformance/matrix.cpp (kept apart so that the
// fuzz target compiles the reader without CLI11). Needs no backend.
#include "cli/matrix_command.hpp"

#include "cli/arguments.hpp"
#include "cli/commands.hpp"
#include "conformance/matrix.hpp"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <system_error>
#include <vector>

namespace sluice::tool {

int matrix_command(const std::vector<std::string>& args) {
  std::string markdown;
  std::vector<std::string> paths;
  parse_arguments(*find_command("conformance"), args,
                  command_options{{{"--markdown", &markdown}}, {}},
                  [&paths](const std::string& arg) {
                    if (arg.empty() || arg[0] == '-') return false;
                    paths.push_back(arg);
                    return true;
                  });
  if (paths.empty())
    throw usage_error("'conformance matrix' needs one or more verdict files (conformance --json)");
  std::vector<verdict_file> files;
  for (const auto& path : paths) {
    try {
      files.push_back(read_verdict_file(path));
    } catch (const std::exception& e) {
      std::cerr << "sluice conformance matrix: " << path << ": " << e.what() << "\n";
      return 1;
    }
  }
  print_matrix(std::cout, files, false);
  if (!markdown.empty()) {
    // Like the reports of `sluice conformance`: missing directories are created.
    const auto directory = std::filesystem::path(markdown).parent_path();
    std::error_code ignored;
    if (!directory.empty()) std::filesystem::create_directories(directory, ignored);
    std::ofstream out(markdown);
    if (out) print_matrix(out, files, true);
    out.close();
    if (!out) {
      std::cerr << "sluice conformance matrix: cannot write " << markdown << "\n";
      return 1;
    }
    std::cout << "markdown: " << markdown << "\n";
  }
  return 0;
}

}  // namespace sluice::tool
