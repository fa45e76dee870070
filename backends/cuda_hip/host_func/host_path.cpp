#include "host_func/host_path.hpp"

#include "settings.hpp"

#include <fstream>
#include <iterator>
#include <optional>
#include <string_view>
#include <utility>

namespace sluice::detail::host_path {

namespace {

//! A tool that serializes kernel launches, and the libraries that only it
//! loads (seen in /proc/self/maps on one H200, tools 2025.3.1), in the order
//! evidence prefers them.
struct tool {
  const char* name;
  std::vector<const char*> libraries;
};
const tool serializing_tools[] = {
    {"compute-sanitizer", {"libsanitizer-collection.so", "libsanitizer-public.so"}},
    {"Nsight Compute", {"libcuda-injection.so"}},
};

std::optional<mode> parse_mode(std::string_view v) {
  if (v == "auto") return mode::automatic;
  if (v == "signal") return mode::signal;
  if (v == "kernel") return mode::kernel;
  if (v == "callback") return mode::callback;
  return std::nullopt;
}

bool spins_kernel(mode m) { return m == mode::kernel || m == mode::automatic; }

//! The file each line of a maps text maps, by name: the last component of
//! its path. A maps line is "address perms offset dev inode path", the path
//! absent for anonymous memory and bracketed for the kernel's ([heap],
//! [vdso]); a file deleted since it was mapped ends in " (deleted)", and is
//! still loaded.
std::vector<std::string_view> mapped_file_names(std::string_view maps) {
  std::vector<std::string_view> names;
  while (!maps.empty()) {
    const std::size_t end = maps.find('\n');
    std::string_view line = maps.substr(0, end);
    maps.remove_prefix(end == std::string_view::npos ? maps.size() : end + 1);
    // Past the five fields before the path, and the spaces after them.
    for (int field = 0; field < 5 && !line.empty(); ++field) {
      const std::size_t space = line.find(' ');
      line.remove_prefix(space == std::string_view::npos ? line.size() : space);
      const std::size_t next = line.find_first_not_of(' ');
      line.remove_prefix(next == std::string_view::npos ? line.size() : next);
    }
    if (line.empty() || line.front() != '/') continue;
    constexpr std::string_view deleted = " (deleted)";
    if (line.size() > deleted.size() && line.substr(line.size() - deleted.size()) == deleted)
      line.remove_suffix(deleted.size());
    names.push_back(line.substr(line.rfind('/') + 1));
  }
  return names;
}

//! Whether `file` is the library `name` ("libx.so"), or a version of it
//! ("libx.so.1", "libx.so.2025.3.1").
bool is_library(std::string_view file, std::string_view name) {
  if (file.substr(0, name.size()) != name) return false;
  const std::string_view version = file.substr(name.size());
  if (version.empty()) return true;
  return version.size() > 1 && version.front() == '.' &&
         version.find_first_not_of("0123456789.") == std::string_view::npos;
}

//! On for a decimal integer other than 0, off for anything else: the vendors
//! document only 0 and the values that turn a switch on (1; AMD_SERIALIZE_KERNEL
//! also 2 and 3, each serializing), so the reading is strict rather than a
//! guess at theirs: no sign, no spaces, no words ("", "yes", " 1": off).
bool switched_on(const char* value) {
  if (value == nullptr || *value == '\0') return false;
  const std::string_view v(value);
  return v.find_first_not_of("0123456789") == std::string_view::npos &&
         v.find_first_not_of('0') != std::string_view::npos;
}

//! The first sign of a tool that serializes kernel launches, as evidence;
//! empty where there is none.
std::string serializing_tool(const input& in) {
  const std::vector<std::string_view> files = mapped_file_names(in.maps);
  for (const tool& t : serializing_tools)
    for (const char* library : t.libraries)
      for (std::string_view file : files)
        if (is_library(file, library))
          return std::string(t.name) + " detected (" + std::string(file) + " loaded)";
  for (const std::string& variable : in.launch_blocking_variables) {
    const char* value = in.getenv ? in.getenv(variable.c_str()) : nullptr;
    if (switched_on(value)) return variable + "=" + value + " (kernel launches serialized)";
  }
  return {};
}

const char* name_of(mode m) {
  switch (m) {
    case mode::automatic: return "auto";
    case mode::signal: return "signal";
    case mode::kernel: return "kernel";
    case mode::callback: return "callback";
    case mode::invalid: break;
  }
  return "invalid";
}

choice make(mode m, std::string evidence) {
  choice c;
  c.path = m;
  c.name = name_of(m);
  c.evidence = std::move(evidence);
  return c;
}

choice decide_path(const input& in, const std::string& tool) {
  // A tool that is seen but changes nothing is still named.
  const std::string also = tool.empty() ? std::string() : "; " + tool;
  if (const char* set = in.getenv ? in.getenv("SLUICE_HOST_FUNC_PATH") : nullptr) {
    const std::string given = std::string("SLUICE_HOST_FUNC_PATH=") + set;
    if (const auto m = parse_mode(set)) return make(*m, given + " (set explicitly)" + also);
    return make(mode::invalid,
                given + " (set explicitly; must be auto, signal, kernel or callback)");
  }
  const auto fallback = parse_mode(in.default_path);
  if (!fallback) return make(mode::invalid, "the default '" + in.default_path + "' names no path");
  if (tool.empty())
    return make(*fallback, "the default (no tool that serializes kernel launches found)");
  if (spins_kernel(*fallback)) return make(mode::signal, tool);
  return make(*fallback, "the default, which spins no kernel" + also);
}

}  // namespace

choice decide(const input& in) {
  const std::string tool = serializing_tool(in);
  choice c = decide_path(in, tool);
  c.launches_serialized = !tool.empty();
  return c;
}

input this_process(std::string default_path, std::vector<std::string> launch_blocking_variables) {
  input in;
  in.default_path = std::move(default_path);
  in.launch_blocking_variables = std::move(launch_blocking_variables);
  // Every variable read here is declared in settings.cpp (SLUICE_HOST_FUNC_PATH
  // and the traits' launch_blocking_variables).
  in.getenv = [](const char* name) -> const char* { return settings::value(name); };
  std::ifstream maps("/proc/self/maps");
  if (maps) in.maps.assign(std::istreambuf_iterator<char>(maps), std::istreambuf_iterator<char>());
  return in;
}

}  // namespace sluice::detail::host_path
