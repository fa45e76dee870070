// The framing scanner of `sluice trace report`'s reader (framing_scanner.hpp).
#include "trace/framing_scanner.hpp"

#include <array>
#include <cstdio>
#include <stdexcept>

namespace sluice::tool {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char text[16];
  std::snprintf(text, sizeof text, "byte 0x%02x", u);
  return text;
}

}  // namespace

void fail_at(std::uint64_t byte, const std::string& what) {
  throw std::runtime_error("byte " + std::to_string(byte) + ": " + what);
}

void framing_scanner::feed(const char* p, std::size_t n) {
  std::size_t i = 0;
  while (i < n) {
    if (capturing_) {
      i = capture(p, n, i);
      continue;
    }
    const char c = p[i];
    if (is_space(c)) {
      ++i;
      continue;
    }
    step(p, i);
    if (!capturing_) ++i;
  }
  if (capturing_) {
    append_capture(p + cap_from_, n - cap_from_);
    cap_from_ = 0;
  }
  offset_ += n;
}

void framing_scanner::end() {
  if (offset_ == 0) fail_at(0, "the file is empty");
  if (state_ == at::document) fail_at(offset_, "the file holds only white space");
  if (state_ != at::done) fail_at(offset_, "the file ends inside the JSON document (truncated?)");
  if (in_object_ && !seen_events_)
    fail_at(offset_, "not a Chrome trace: the object has no traceEvents array");
}

// One character outside any value being captured.
void framing_scanner::step(const char* p, std::size_t i) {
  const char c = p[i];
  const std::uint64_t byte = offset_ + i;
  switch (state_) {
    case at::document:
      if (c == '{') {
        in_object_ = true;
        state_ = at::key_first;
      } else if (c == '[') {
        state_ = at::event_first;
      } else {
        fail_at(byte, "not a Chrome trace: it begins with " + shown(c) +
                          ", not with '{' (an object with traceEvents) or '['");
      }
      return;
    case at::key_first:
      if (c == '}') {
        state_ = at::done;
        return;
      }
      [[fallthrough]];
    case at::key:
      if (c != '"') fail_at(byte, "expected a field name, found " + shown(c));
      start_capture(p, i, a_key);
      return;
    case at::colon:
      if (c != ':') fail_at(byte, "expected ':' after the field name, found " + shown(c));
      state_ = at::value;
      return;
    case at::value:
      if (key_ == "traceEvents") {
        if (seen_events_) fail_at(byte, "a second traceEvents array");
        if (c != '[')
          fail_at(byte,
                  std::string("traceEvents is not an array (it begins with ") + shown(c) + ")");
        seen_events_ = true;
        state_ = at::event_first;
        return;
      }
      start_capture(p, i, a_value);
      return;
    case at::after_value:
      if (c == ',') {
        state_ = at::key;
      } else if (c == '}') {
        state_ = at::done;
      } else {
        fail_at(byte, "expected ',' or '}' after a field's value, found " + shown(c));
      }
      return;
    case at::event_first:
      if (c == ']') {
        close_events();
        return;
      }
      [[fallthrough]];
    case at::event: start_capture(p, i, an_event); return;
    case at::after_event:
      if (c == ',') {
        state_ = at::event;
      } else if (c == ']') {
        close_events();
      } else {
        fail_at(byte, "expected ',' or ']' after an event, found " + shown(c));
      }
      return;
    case at::done: fail_at(byte, "text after the end of the JSON document: " + shown(c));
  }
}

void framing_scanner::close_events() { state_ = in_object_ ? at::after_value : at::done; }

void framing_scanner::start_capture(const char* p, std::size_t i, role r) {
  const char c = p[i];
  role_ = r;
  cap_byte_ = offset_ + i;
  cap_from_ = i;
  capturing_ = true;
  in_string_ = escape_ = false;
  depth_ = 0;
  if (c == '{' || c == '[') {
    cap_kind_ = nested;
  } else if (c == '"') {
    cap_kind_ = string;
  } else if (c == '-' || (c >= '0' && c <= '9') || c == 't' || c == 'f' || c == 'n') {
    cap_kind_ = scalar;
  } else {
    capturing_ = false;
    fail_at(offset_ + i, "expected a JSON value, found " + shown(c));
  }
}

// Follows the value being captured from p[i]; returns where to go on.
std::size_t framing_scanner::capture(const char* p, std::size_t n, std::size_t i) {
  if (cap_kind_ == scalar) {
    for (; i < n; ++i) {
      const char c = p[i];
      if (c == ',' || c == ']' || c == '}' || is_space(c)) {
        complete(p, i);
        return i;  // the delimiter is the state machine's
      }
      if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '+' || c == '-' ||
            c == 'E'))
        fail_at(offset_ + i, in_event() + "unexpected " + shown(c) + " in a number or literal");
    }
    return n;
  }
  if (cap_kind_ == string && i == cap_from_ && !in_string_) {
    in_string_ = true;  // the opening quote
    ++i;
  }
  // The bytes that matter are looked up in a table: in a string, the quote
  // and the backslash; outside, the quote and the brackets.
  static const auto table = [] {
    std::array<std::array<bool, 256>, 2> t{};
    t[1]['"'] = t[1]['\\'] = true;
    for (const unsigned char c : {'"', '{', '[', '}', ']'}) t[0][c] = true;
    return t;
  }();
  for (;;) {
    if (in_string_) {
      if (escape_) {
        if (i >= n) return n;
        escape_ = false;
        ++i;
      }
      while (i < n && !table[1][static_cast<unsigned char>(p[i])]) ++i;
      if (i >= n) return n;
      if (p[i++] == '\\') {
        escape_ = true;
        continue;
      }
      in_string_ = false;
      if (cap_kind_ == string) {
        complete(p, i);
        return i;
      }
      continue;
    }
    while (i < n && !table[0][static_cast<unsigned char>(p[i])]) ++i;
    if (i >= n) return n;
    const char c = p[i];
    switch (c) {
      case '"': in_string_ = true; break;
      case '{':
      case '[':
        if (depth_ == max_depth)
          fail_at(offset_ + i,
                  in_event() + "nested deeper than " + std::to_string(max_depth) + " levels");
        open_[depth_++] = c;
        break;
      default:  // '}' or ']'
        if (depth_ == 0 || open_[depth_ - 1] != (c == '}' ? '{' : '['))
          fail_at(offset_ + i, in_event() + shown(c) + " does not close the open " +
                                   (depth_ == 0 ? std::string("value") : shown(open_[depth_ - 1])));
        if (--depth_ == 0) {
          complete(p, i + 1);
          return i + 1;
        }
        break;
    }
    ++i;
  }
}

//! "event N: " while an event is being captured.
std::string framing_scanner::in_event() const {
  return role_ == an_event ? "event " + std::to_string(events_ + 1) + ": " : std::string();
}

void framing_scanner::append_capture(const char* p, std::size_t n) {
  if (cap_.size() + n > max_value)
    fail_at(cap_byte_, in_event() +
                           (role_ == an_event ? std::string("an event") : std::string("a value")) +
                           " of more than " + std::to_string(max_value >> 20) + " MiB");
  cap_.append(p, n);
}

// The value captured ends before p[e].
void framing_scanner::complete(const char* p, std::size_t e) {
  capturing_ = false;
  const char* data = p + cap_from_;
  std::size_t len = e - cap_from_;
  if (!cap_.empty()) {
    append_capture(data, len);
    cap_.reserve(cap_.size() + simdjson::SIMDJSON_PADDING);
    data = cap_.data();
    len = cap_.size();
  }
  simdjson::dom::element v;
  const auto error = parser_.parse(data, len, false).get(v);
  const std::uint64_t byte = cap_byte_;
  if (cap_.capacity() > (1u << 20)) std::string().swap(cap_);
  cap_.clear();
  if (error)
    fail_at(byte,
            std::string(role_ == an_event ? "event " + std::to_string(events_ + 1) + ": " : "") +
                "malformed JSON: " + simdjson::error_message(error));
  switch (role_) {
    case a_key:
      key_ = std::string(v.get_string().value_unsafe());
      state_ = at::colon;
      return;
    case a_value: state_ = at::after_value; return;
    case an_event:
      ++events_;
      handler_.event(v, events_, byte);
      state_ = at::after_event;
      return;
  }
}

}  // namespace sluice::tool
