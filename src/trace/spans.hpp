// The arguments of the spans that note_span (trace.hpp) announces, kept
// until the writer draws them. Internal.
#pragma once

#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

namespace sluice::detail::trace {

//! note_span's category and arguments, by range id, until the writer draws
//! the span (on its thread): sluice::comm's operations, few next to the
//! operations around them.
struct span_table {
  std::mutex m;
  std::unordered_map<std::uint64_t, std::pair<const char*, std::string>> spans;
};

//! The process's table (never destroyed: used at exit).
span_table& the_spans();

}  // namespace sluice::detail::trace
