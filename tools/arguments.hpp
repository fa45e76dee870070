// How every command of `sluice` parses its options: with CLI11 (Debian:
// libcli11-dev, header-only), through the one function below, so that a parse
// error, an unknown argument or a missing value is the same usage_error
// (commands.hpp: "sluice: error: <what>", the command's usage line, exit
// status 2) whichever command it concerns. Included by the programs only
// (dispatcher.cpp, backend_main.cpp): CLI11 is a large header.
#pragma once

#include "commands.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace sluice::tool {

//! Parses the arguments of `command` (those after its name) with CLI11:
//! `declare` adds the command's options and flags to the app. An argument that
//! none of them takes goes to `extra`, which returns false to reject it; a
//! rejected argument ("unknown argument 'X' for 'info'"), a missing or empty
//! value and any other CLI11 error are a usage_error, so that every command
//! reports them alike (sluice: error: ..., the usage line, exit status 2).
//! Help is answered before (answer_general_help, asks_for_help): CLI11's own
//! --help is off.
inline void parse_arguments(const command_info& command, std::vector<std::string> args,
                            const std::function<void(CLI::App&)>& declare,
                            const std::function<bool(const std::string&)>& extra = nullptr) {
  CLI::App app{"", command.name};
  app.set_help_flag();
  app.allow_extras();
  if (declare) declare(app);
  // Every option of every command takes a non-empty value: "--filter=" is a usage error.
  for (CLI::Option* option : app.get_options())
    if (option->get_expected_min() > 0)
      option->check(
          [](const std::string& value) { return value.empty() ? "needs a value" : std::string(); });
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  try {
    app.parse(args);
  } catch (const CLI::ParseError& e) {
    throw usage_error(std::string(e.what()) + " (for '" + command.name + "')");
  }
  for (const std::string& rest : app.remaining())
    if (!extra || !extra(rest))
      throw usage_error("unknown argument '" + rest + "' for '" + command.name + "'");
}

}  // namespace sluice::tool
