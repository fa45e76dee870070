#include "conformance/test_filter.hpp"

#include <algorithm>

namespace sluice::tool {

namespace {

bool wildcard_match(const char* pattern, const char* text) {
  // Iterative glob match with backtracking to the last '*'.
  const char* star = nullptr;
  const char* resume = nullptr;
  while (*text != '\0') {
    if (*pattern == '*') {
      star = pattern++;
      resume = text;
    } else if (*pattern == '?' || *pattern == *text) {
      ++pattern;
      ++text;
    } else if (star != nullptr) {
      pattern = star + 1;
      text = ++resume;
    } else {
      return false;
    }
  }
  while (*pattern == '*') ++pattern;
  return *pattern == '\0';
}

bool matches_any(const std::string& name, const std::string& patterns) {
  std::size_t start = 0;
  while (start <= patterns.size()) {
    const auto end = std::min(patterns.find(':', start), patterns.size());
    if (wildcard_match(patterns.substr(start, end - start).c_str(), name.c_str())) return true;
    start = end + 1;
  }
  return false;
}

}  // namespace

bool matches_filter(const std::string& full_name, const std::string& filter) {
  const auto dash = filter.find('-');
  std::string positive = filter.substr(0, dash);
  const std::string negative = dash == std::string::npos ? "" : filter.substr(dash + 1);
  if (positive.empty()) positive = "*";
  return matches_any(full_name, positive) &&
         (negative.empty() || !matches_any(full_name, negative));
}

}  // namespace sluice::tool
