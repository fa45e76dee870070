#include "cli/arguments.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>

namespace sluice::tool {

void parse_arguments(const command_info& command, std::vector<std::string> args,
                     const command_options& options,
                     const std::function<bool(const std::string&)>& extra) {
  CLI::App app{"", command.name};
  app.set_help_flag();
  app.allow_extras();
  // Every option of every command takes a non-empty value: "--filter=" is a usage error.
  const auto not_empty = [](const std::string& value) {
    return value.empty() ? std::string("needs a value") : std::string();
  };
  for (const auto& value : options.values)
    app.add_option(value.first, *value.second)->check(not_empty);
  for (const auto& flag : options.flags) app.add_flag(flag.first, *flag.second);
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
