// ctest unit.environment_reads: sluice reads the environment only through its
// settings registry (src/settings.hpp). Every source of include/, src/,
// backends/ and tools/ is scanned, its comments and string literals left out,
// for a getenv or secure_getenv call (or the function named with `::`), a use
// of environ and a call of integer_from_environment; outside the registry's
// files each one fails the test, with its file and line, unless the
// allow-list below names it. bench/ is not scanned: a benchmark reads its own
// knobs (SLUICE_COMMBENCH_*), which are no setting of the library.
//
// The allow-list holds the matches that read no variable (the environment
// handed on to a child process as it is) and the one read still to convert;
// an entry matches by the folder or file it is in and the line, so that code
// moved verbatim keeps its entry. An entry that matches nothing is printed
// (remove it). A variable that an entry names must be declared in the
// registry.
//
//   sluice-environment-reads <source root>
#include "settings.hpp"

#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
};

const allowed allow_list[] = {
    // Not a read: the environment handed on to gnuplot as it is.
    {"tools/", "if (posix_spawnp(&pid, \"gnuplot\", nullptr, nullptr, args, environ) != 0)", ""},
};

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_';
}

//! Whether `line` (code only) reads the environment: a call of getenv or
//! secure_getenv (not a member called so: host_path's injected
//! `in.getenv(...)`), the function named with `::` (called or taken), environ
//! or __environ, or a call of integer_from_environment.
bool reads_environment(const std::string& line) {
  const std::size_t size = line.size();
  const auto whole_word = [&](std::size_t at, const std::string& word) {
    return line.compare(at, word.size(), word) == 0 && (at == 0 || !identifier_char(line[at - 1])) &&
           (at + word.size() >= size || !identifier_char(line[at + word.size()]));
  };
  const auto called = [&](std::size_t after) {
    while (after < size && std::isspace(static_cast<unsigned char>(line[after])) != 0) ++after;
    return after < size && line[after] == '(';
  };
  for (std::size_t at = 0; at < size; ++at) {
    for (const std::string name : {"getenv", "secure_getenv"}) {
      if (!whole_word(at, name)) continue;
      std::size_t before = at;
      while (before > 0 && std::isspace(static_cast<unsigned char>(line[before - 1])) != 0) --before;
      if (before >= 2 && line[before - 1] == ':' && line[before - 2] == ':') return true;
      const char previous = at == 0 ? ' ' : line[at - 1];
      if (previous != '.' && previous != '>' && previous != ':' && called(at + name.size()))
        return true;
    }
    if (whole_word(at, "environ") || whole_word(at, "__environ")) return true;
    const std::string parser = "integer_from_environment";
    if (whole_word(at, parser) && called(at + parser.size())) return true;
  }
  return false;
}

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
        if (!reads_environment(code[n])) continue;
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
