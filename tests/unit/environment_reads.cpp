// ctest unit.environment_reads: sluice reads the environment only through its
// settings registry (src/settings.hpp). Every source of include/, src/,
// backends/ and tools/ is scanned, its comments and string literals left out,
// for a getenv or secure_getenv call (or the function named with `::`), a use
// of environ and a call of integer_from_environment; outside the registry's
// files each one fails the test, with its file and line, unless the
// allow-list below names it. bench/ is not scanned: a benchmark reads its own
// knobs (SLUICE_COMMBENCH_*), which are no setting of the library.
//
// The allow-list holds today's reads in files whose owners convert them to
// the registry's accessors; an entry matches a read by the folder or file it
// is in and the read's line, so that code moved verbatim keeps its entry. An
// entry that matches nothing is printed (remove it). The variable each entry
// reads must be declared in the registry, except the test-only ones being
// replaced by SLUICE_TEST_MUTATION.
//
//   sluice-environment-reads <source root>
#include "settings.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

namespace {

namespace fs = std::filesystem;

// The registry: the accessors (settings.cpp) and the integer parser they use
// (environment.*, also the fuzz target's).
const char* const registry_files[] = {"src/settings.cpp", "src/environment.cpp",
                                      "src/environment.hpp"};

struct allowed {
  const char* where;      // a folder ("src/comm/") or a file
  const char* line;       // the read's line, without its indentation
  const char* variables;  // what it reads, comma-separated; "" for no variable
  bool replaced;          // a test-only variable that SLUICE_TEST_MUTATION replaces
};

// How each is read, for the owners' conversion: the accessor of settings.hpp
// that keeps its behaviour is named after the arrow.
const allowed allow_list[] = {
    // src/comm: cached once per process, or rank 0's for a communicator.
    {"src/comm/",
     "if (const char* v = std::getenv(\"SLUICE_COMM_NCCL_LANES\"); v != nullptr && *v != '\\0') {",
     "SLUICE_COMM_NCCL_LANES", false},  // -> comm_nccl_lanes(), a bad value as 0 (rank0_setting)
    {"src/comm/", "static_cast<std::size_t>(sluice::detail::integer_from_environment(",
     "SLUICE_COMM_RING_BYTES, SLUICE_COMM_SMALL_BYTES", false},  // -> comm_ring_bytes(), ...
    {"src/comm/",
     ": timeout_s_(sluice::detail::integer_from_environment(\"SLUICE_COMM_TIMEOUT_S\", 300, 1, "
     "86400)) {",
     "SLUICE_COMM_TIMEOUT_S", false},  // -> comm_timeout_s()
    {"src/comm/", "return sluice::detail::integer_from_environment(name, fallback, low, high);",
     "SLUICE_COMM_PIECE_BYTES, SLUICE_COMM_PIECES_IN_FLIGHT",
     false},  // -> comm_piece_bytes(fallback), comm_pieces_in_flight()
    {"src/comm/", "const char* v = std::getenv(\"SLUICE_COMM_MUTATION\");", "SLUICE_COMM_MUTATION",
     true},
    {"src/kokkos/", "const char* v = std::getenv(\"SLUICE_KOKKOS_MUTATION\");",
     "SLUICE_KOKKOS_MUTATION", true},
    {"backends/host/mutation.cpp", "const char* value = std::getenv(\"SLUICE_HOST_MUTATION\");",
     "SLUICE_HOST_MUTATION", true},
    // backends/cuda_hip
    {"backends/cuda_hip/",
     "in.getenv = [](const char* name) -> const char* { return std::getenv(name); };",
     "SLUICE_HOST_FUNC_PATH, CUDA_LAUNCH_BLOCKING, HIP_LAUNCH_BLOCKING, AMD_SERIALIZE_KERNEL",
     false},  // -> value(name)
    {"backends/cuda_hip/", "const char* v = std::getenv(\"SLUICE_TRACE_SOURCE\");",
     "SLUICE_TRACE_SOURCE", false},  // -> trace_source()
    {"backends/cuda_hip/",
     "if (api::preferred_hardware_queues > 0 && std::getenv(api::hardware_queues_variable) == "
     "nullptr)",
     "CUDA_DEVICE_MAX_CONNECTIONS, GPU_MAX_HW_QUEUES", false},  // -> value(name)
    {"backends/cuda_hip/",
     "if (*api::module_loading_variable != '\\0' && std::getenv(api::module_loading_variable) == "
     "nullptr)",
     "CUDA_MODULE_LOADING", false},  // -> value(name)
    {"backends/cuda_hip/",
     "d.hardware_queues = integer_from_environment(api::hardware_queues_variable,",
     "CUDA_DEVICE_MAX_CONNECTIONS, GPU_MAX_HW_QUEUES", false},  // -> integer(name, fallback)
    {"backends/cuda_hip/", "std::size_t{1024} * static_cast<std::size_t>(integer_from_environment(",
     "SLUICE_STAGING_CHUNK_KIB", false},  // -> staging_chunk_kib()
    {"backends/cuda_hip/", "const char* v = std::getenv(name);", "SLUICE_CUPTI_BUFFERS",
     false},  // env_count -> cupti_buffers(fallback)
    {"backends/cuda_hip/", "const char* named = std::getenv(\"SLUICE_CUPTI_LIBRARY\");",
     "SLUICE_CUPTI_LIBRARY", false},  // -> cupti_library()
    {"backends/cuda_hip/", "const char* mode = std::getenv(\"SLUICE_CUPTI_CORRELATION\");",
     "SLUICE_CUPTI_CORRELATION", false},  // -> cupti_correlation()
    {"backends/cuda_hip/",
     "if (const char* v = std::getenv(\"SLUICE_TRACE_COUNTER\"); v != nullptr && *v != '\\0')",
     "SLUICE_TRACE_COUNTER", false},  // -> trace_counter()
    {"backends/cuda_hip/",
     "const int both = integer_from_environment(\"SLUICE_PEER_SM_MAX_KIB\", -1, 0, most);",
     "SLUICE_PEER_SM_MAX_KIB", false},  // -> peer_sm_max_kib()
    {"backends/cuda_hip/",
     "return std::size_t{1024} * static_cast<std::size_t>(integer_from_environment(",
     "SLUICE_PEER_SM_PUSH_MAX_KIB, SLUICE_PEER_SM_PULL_MAX_KIB",
     false},  // -> peer_sm_push_max_kib(fallback), peer_sm_pull_max_kib(fallback)
    {"backends/cuda_hip/",
     "static_cast<std::size_t>(integer_from_environment(\"SLUICE_PEER_SM_BATCH_MAX_KIB\",",
     "SLUICE_PEER_SM_BATCH_MAX_KIB", false},  // -> peer_sm_batch_max_kib(fallback)
    {"backends/cuda_hip/",
     "integer_from_environment(\"SLUICE_STREAM_RESERVE\", api::stream_reserve_default, 0, 4096);",
     "SLUICE_STREAM_RESERVE", false},  // -> stream_reserve(fallback)
    {"backends/cuda_hip/", "const char* batch = std::getenv(\"SLUICE_CUDA_BATCH_MEMOP\");",
     "SLUICE_CUDA_BATCH_MEMOP", false},  // -> cuda_batch_memop()
    // tools
    {"tools/", "const char* environment = std::getenv(\"SLUICE_BACKEND\");", "SLUICE_BACKEND",
     false},  // -> command_backend()
    {"tools/", "if (const char* value = std::getenv(variable); value != nullptr) {",
     "CUDA_VISIBLE_DEVICES, HIP_VISIBLE_DEVICES, ROCR_VISIBLE_DEVICES", false},  // -> value(s)
    {"tools/", "const char* dir = std::getenv(\"TMPDIR\");", "TMPDIR", false},   // -> value(s)
    // Not a read: the environment handed on to gnuplot as it is.
    {"tools/", "if (posix_spawnp(&pid, \"gnuplot\", nullptr, nullptr, args, environ) != 0)", "",
     false},
};

// Calls of getenv/secure_getenv (not a member called so: host_path's
// injected `in.getenv(...)`), the function named with `::` (called or taken),
// environ, and integer_from_environment.
const std::regex reads(R"((^|[^A-Za-z0-9_.>:])(secure_)?getenv\s*\()"
                       R"(|::\s*(secure_)?getenv\b)"
                       R"(|(^|[^A-Za-z0-9_])(__)?environ\b)"
                       R"(|(^|[^A-Za-z0-9_])integer_from_environment\s*\()");

//! `text` with its comments and the insides of its string and character
//! literals made blanks, line breaks kept.
std::string code_only(const std::string& text) {
  std::string out = text;
  enum { code, line_comment, block_comment, string, character, raw } state = code;
  std::string raw_end;
  for (std::size_t i = 0; i < out.size(); ++i) {
    const char c = text[i];
    const char next = i + 1 < text.size() ? text[i + 1] : '\0';
    switch (state) {
      case code:
        if (c == '/' && next == '/') {
          state = line_comment;
          out[i] = ' ';
        } else if (c == '/' && next == '*') {
          state = block_comment;
          out[i] = out[i + 1] = ' ';
          ++i;
        } else if (c == 'R' && next == '"' &&
                   (i == 0 || !(std::isalnum(static_cast<unsigned char>(text[i - 1])) ||
                                text[i - 1] == '_'))) {
          const std::size_t open = text.find('(', i + 2);
          if (open == std::string::npos) break;
          raw_end = ")" + text.substr(i + 2, open - i - 2) + "\"";
          state = raw;
          i = open;
        } else if (c == '"') {
          state = string;
        } else if (c == '\'' &&
                   !(i > 0 && std::isxdigit(static_cast<unsigned char>(text[i - 1])))) {
          state = character;  // not a digit separator (1'000)
        }
        break;
      case line_comment:
        if (c == '\n')
          state = code;
        else
          out[i] = ' ';
        break;
      case block_comment:
        if (c == '*' && next == '/') {
          out[i] = out[i + 1] = ' ';
          ++i;
          state = code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case string:
      case character:
        if (c == '\\') {
          out[i] = ' ';
          if (next != '\n' && i + 1 < out.size()) out[++i] = ' ';
        } else if ((state == string && c == '"') || (state == character && c == '\'')) {
          state = code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
      case raw:
        if (text.compare(i, raw_end.size(), raw_end) == 0) {
          i += raw_end.size() - 1;
          state = code;
        } else if (c != '\n') {
          out[i] = ' ';
        }
        break;
    }
  }
  return out;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string trimmed(const std::string& s) {
  const std::size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  const std::size_t b = s.find_last_not_of(" \t\r");
  return s.substr(a, b - a + 1);
}

bool is_source(const fs::path& p) {
  const std::string e = p.extension().string();
  return e == ".cpp" || e == ".hpp" || e == ".h" || e == ".cu" || e == ".cuh" || e == ".cc";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <source root>\n", argv[0]);
    return 2;
  }
  const fs::path root = argv[1];
  int failures = 0;
  std::vector<int> used(sizeof allow_list / sizeof allow_list[0], 0);
  std::size_t files = 0;
  for (const char* folder : {"include", "src", "backends", "tools"}) {
    if (!fs::exists(root / folder)) continue;
    for (const auto& entry : fs::recursive_directory_iterator(root / folder)) {
      if (!entry.is_regular_file() || !is_source(entry.path())) continue;
      const std::string relative = entry.path().lexically_relative(root).generic_string();
      bool registry = false;
      for (const char* r : registry_files) registry = registry || relative == r;
      if (registry) continue;
      ++files;
      std::ifstream in(entry.path(), std::ios::binary);
      std::ostringstream text;
      text << in.rdbuf();
      const std::vector<std::string> original = lines_of(text.str());
      const std::vector<std::string> code = lines_of(code_only(text.str()));
      for (std::size_t n = 0; n < code.size() && n < original.size(); ++n) {
        if (!std::regex_search(code[n], reads)) continue;
        const std::string line = trimmed(original[n]);
        bool ok = false;
        for (std::size_t a = 0; a < used.size(); ++a) {
          const allowed& e = allow_list[a];
          if (relative.rfind(e.where, 0) == 0 && line == e.line) {
            ++used[a];
            ok = true;
          }
        }
        if (!ok) {
          ++failures;
          std::printf("%s:%zu: reads the environment outside src/settings.hpp's registry: %s\n",
                      relative.c_str(), n + 1, line.c_str());
        }
      }
    }
  }
  for (std::size_t a = 0; a < used.size(); ++a) {
    const allowed& e = allow_list[a];
    if (used[a] == 0)
      std::printf("note: the allow-list entry for %s '%s' matches no read: remove it\n", e.where,
                  e.line);
    if (e.replaced) continue;
    std::string names = e.variables;
    std::istringstream list(names);
    for (std::string name; std::getline(list, name, ',');) {
      name = trimmed(name);
      if (!name.empty() && sluice::detail::settings::find(name) == nullptr) {
        ++failures;
        std::printf("%s: the allow-list names %s, which src/settings.cpp does not declare\n",
                    e.where, name.c_str());
      }
    }
  }
  if (files == 0) {
    std::printf("no sources found under %s\n", root.string().c_str());
    return 1;
  }
  std::printf("sources scanned: %zu; reads outside the registry: %d\n", files, failures);
  return failures == 0 ? 0 : 1;
}
