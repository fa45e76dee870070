// The Chrome-trace JSON of one record, written by hand (docs/design.md,
// "Libraries"): the trace writer's formatting, and append_record_events
// (trace.hpp) for bench/trace_writer.cpp. Internal.
#pragma once

#include "trace.hpp"

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>

namespace sluice::detail::trace {

constexpr int host_pid = 1000000;  // the track group of the enqueueing host threads

//! `text` with JSON's escapes.
void append_escaped(std::string& out, const std::string& text);

template <class T>
void append_int(std::string& out, T v) {
  char text[24];
  const auto r = std::to_chars(text, text + sizeof text, v);
  out.append(text, r.ptr);
}

//! (ns - origin) / 1000 with three decimals: what "%.3f" printed, exactly
//! (an integer count of ns is an exact decimal in us).
inline void append_us(std::string& out, std::int64_t ns, std::int64_t origin) {
  std::int64_t d = ns - origin;
  if (d < 0) {
    out += '-';
    d = -d;
  }
  append_int(out, d / 1000);
  const auto frac = static_cast<int>(d % 1000);
  const char digits[4] = {'.', static_cast<char>('0' + frac / 100),
                          static_cast<char>('0' + frac / 10 % 10),
                          static_cast<char>('0' + frac % 10)};
  out.append(digits, 4);
}

inline bool is_marker(const record& r) {
  return std::string_view(r.kind) == "range_begin" || std::string_view(r.kind) == "range_end";
}

//! "pid": <device>, "tid": <stream>
inline void append_where(std::string& out, int device, std::uint64_t stream) {
  out += "\"pid\": ";
  append_int(out, device);
  out += ", \"tid\": ";
  append_int(out, stream);
}

//! The instant of r's enqueue on its host thread's track.
void append_enqueue_event(std::string& out, const record& r, std::int64_t origin);

//! r's operation on its stream's track.
void append_op_event(std::string& out, const record& r, std::int64_t origin);

}  // namespace sluice::detail::trace
