// What several benches share: the median they report, the date and the build
// kind they print. Part of the benches, not of sluice.
#pragma once

#include <algorithm>
#include <ctime>
#include <string>
#include <vector>

namespace sluice_bench {

//! The median of v (the mean of the two middle values when v has an even size).
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

//! Now, in UTC, as 2026-12-02T14:03:34Z.
inline std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

//! Whether the bench was built with NDEBUG, in the words its output uses.
inline const char* build_kind() {
#ifdef NDEBUG
  return "NDEBUG (release)";
#else
  return "NDEBUG not defined: not a Release build, numbers are not representative";
#endif
}

}  // namespace sluice_bench
