// The path of the running program, for the dispatcher (which looks for the
// backend programs next to itself) and for gtest (which re-runs the program
// for death tests).
#pragma once

#include <unistd.h>

#include <climits>
#include <string>

namespace sluice::tool {

//! The program's own file through /proc/self/exe; argv0 where that cannot be read.
inline std::string self_path(const char* argv0) {
  char buffer[PATH_MAX];
  const ssize_t length = readlink("/proc/self/exe", buffer, sizeof buffer - 1);
  return length > 0 ? std::string(buffer, static_cast<std::size_t>(length)) : std::string(argv0);
}

}  // namespace sluice::tool
