// How every command of `sluice` parses its options: with CLI11 (Debian:
// libcli11-dev, header-only), through the one function below, so that a parse
// error, an unknown argument or a missing value is the same usage_error
// (commands.hpp: "sluice: error: <what>", the command's usage line, exit
// status 2) whichever command it concerns. CLI11 is compiled in
// arguments.cpp only (a large header: about 8 s of compiler time per file
// that includes it).
#pragma once

#include "cli/commands.hpp"

#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace sluice::tool {

//! A command's options: those that take a value (stored where the pointer
//! says) and flags (set to true when given).
struct command_options {
  std::vector<std::pair<const char*, std::string*>> values;  //!< {"--filter", &filter}
  std::vector<std::pair<const char*, bool*>> flags;          //!< {"--list", &list}
};

//! Parses the arguments of `command` (those after its name) with CLI11. An
//! argument that none of `options` takes goes to `extra`, which returns false
//! to reject it; a rejected argument ("unknown argument 'X' for 'info'"), a
//! missing or empty value and any other CLI11 error are a usage_error, so that
//! every command reports them alike (sluice: error: ..., the usage line, exit
//! status 2). Help is answered before (answer_general_help, asks_for_help):
//! CLI11's own --help is off.
void parse_arguments(const command_info& command, std::vector<std::string> args,
                     const command_options& options,
                     const std::function<bool(const std::string&)>& extra = nullptr);

}  // namespace sluice::tool
