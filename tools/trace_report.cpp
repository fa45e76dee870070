#include "trace_report.hpp"

#include <fcntl.h>
#include <simdjson.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>

namespace sluice::tool {
namespace {

// --- reading: a framing scanner around simdjson ----------------------------------
//
// simdjson parses each event (and every other value of the document) on its
// own, so the memory is one event's, not the file's. What stays hand-written
// is the scanner that finds where a value ends: it follows strings (and their
// escapes) and brackets, nothing else (docs/design.md, "Libraries").

constexpr std::size_t max_depth = 64;         // inside one event
constexpr std::size_t max_value = 64u << 20;  // one event's bytes
constexpr std::size_t block_size = 1u << 20;  // read at a time
constexpr double max_time_us = 1e15;          // about 31 years

//! k == w, without a call to memcmp (the keys are short).
template <std::size_t N>
bool is(std::string_view k, const char (&w)[N]) {
  if (k.size() != N - 1) return false;
  for (std::size_t i = 0; i + 1 < N; ++i)
    if (k[i] != w[i]) return false;
  return true;
}

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

std::string shown(char c) {
  const auto u = static_cast<unsigned char>(c);
  if (u >= 0x20 && u < 0x7f) return std::string("'") + c + "'";
  char text[16];
  std::snprintf(text, sizeof text, "byte 0x%02x", u);
  return text;
}

const char* type_name(simdjson::dom::element_type t) {
  using simdjson::dom::element_type;
  switch (t) {
    case element_type::ARRAY: return "an array";
    case element_type::OBJECT: return "an object";
    case element_type::INT64:
    case element_type::UINT64:
    case element_type::DOUBLE: return "a number";
    case element_type::STRING: return "a string";
    case element_type::BOOL: return "a boolean";
    case element_type::NULL_VALUE: return "null";
  }
  return "a value";
}

class event_reader {
 public:
  explicit event_reader(trace_sink& sink) : sink_(sink) {}

  //! `p` has simdjson::SIMDJSON_PADDING readable bytes after its `n`.
  void feed(const char* p, std::size_t n) {
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

  //! After the last block: the document must be complete.
  void end() {
    if (offset_ == 0) fail_at(0, "the file is empty");
    if (state_ == at::document) fail_at(offset_, "the file holds only white space");
    if (state_ != at::done) fail_at(offset_, "the file ends inside the JSON document (truncated?)");
    if (in_object_ && !seen_events_)
      fail_at(offset_, "not a Chrome trace: the object has no traceEvents array");
  }

 private:
  enum class at {
    document,
    key_first,
    key,
    colon,
    value,
    after_value,
    event_first,
    event,
    after_event,
    done
  };
  enum kind { nested, string, scalar };
  enum role { a_key, a_value, an_event };

  [[noreturn]] void fail_at(std::uint64_t byte, const std::string& what) const {
    throw std::runtime_error("byte " + std::to_string(byte) + ": " + what);
  }

  // One character outside any value being captured.
  void step(const char* p, std::size_t i) {
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

  void close_events() { state_ = in_object_ ? at::after_value : at::done; }

  void start_capture(const char* p, std::size_t i, role r) {
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
  std::size_t capture(const char* p, std::size_t n, std::size_t i) {
    if (cap_kind_ == scalar) {
      for (; i < n; ++i) {
        const char c = p[i];
        if (c == ',' || c == ']' || c == '}' || is_space(c)) {
          complete(p, i);
          return i;  // the delimiter is the state machine's
        }
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '.' || c == '+' ||
              c == '-' || c == 'E'))
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
            fail_at(offset_ + i,
                    in_event() + shown(c) + " does not close the open " +
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
  std::string in_event() const {
    return role_ == an_event ? "event " + std::to_string(events_ + 1) + ": " : std::string();
  }

  void append_capture(const char* p, std::size_t n) {
    if (cap_.size() + n > max_value)
      fail_at(cap_byte_,
              in_event() + (role_ == an_event ? std::string("an event") : std::string("a value")) +
                  " of more than " + std::to_string(max_value >> 20) + " MiB");
    cap_.append(p, n);
  }

  // The value captured ends before p[e].
  void complete(const char* p, std::size_t e) {
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
        event(v, byte);
        state_ = at::after_event;
        return;
    }
  }

  // --- an event ---------------------------------------------------------------------

  [[noreturn]] void bad(std::uint64_t byte, const std::string& what) const {
    fail_at(byte, "event " + std::to_string(events_) + ": " + what);
  }
  std::string_view text(simdjson::dom::element v, const char* field, std::uint64_t byte) const {
    std::string_view s;
    if (v.get_string().get(s))
      bad(byte, std::string("\"") + field + "\" is " + type_name(v.type()) + ", not a string");
    return s;
  }
  double number(simdjson::dom::element v, const char* field, std::uint64_t byte) const {
    double d = 0;
    if (v.get_double().get(d))
      bad(byte, std::string("\"") + field + "\" is " + type_name(v.type()) + ", not a number");
    if (!std::isfinite(d) || std::fabs(d) > max_time_us) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", d);
      bad(byte, std::string("\"") + field + "\" is " + text + ", out of range (at most 1e15 us)");
    }
    return d;
  }
  std::uint64_t whole(simdjson::dom::element v, const char* field, std::uint64_t byte,
                      std::uint64_t most = UINT64_MAX) const {
    std::uint64_t u = 0;
    if (v.type() == simdjson::dom::element_type::INT64 && v.get_int64().value_unsafe() < 0)
      bad(byte, std::string("\"") + field + "\" is negative");
    if (v.get_uint64().get(u))
      bad(byte, std::string("\"") + field + "\" is " +
                    (v.is_number() ? std::string("not a whole number")
                                   : std::string(type_name(v.type())) + ", not a number"));
    if (u > most)
      bad(byte, std::string("\"") + field + "\" is " + std::to_string(u) + ", more than " +
                    std::to_string(most));
    return u;
  }

  void event(simdjson::dom::element e, std::uint64_t byte) {
    simdjson::dom::object o;
    if (e.get_object().get(o))
      bad(byte, std::string("is ") + type_name(e.type()) + ", not an object");
    std::string_view ph, cat, name;
    bool has_ph = false, has_name = false, has_pid = false, has_tid = false, has_ts = false,
         has_dur = false, has_args = false;
    std::uint64_t pid = 0, tid = 0;
    double ts = 0, dur = 0;
    simdjson::dom::object args;
    for (const auto field : o) {
      const std::string_view k = field.key;
      if (is(k, "ph")) {
        ph = text(field.value, "ph", byte);
        has_ph = true;
      } else if (is(k, "cat")) {
        cat = text(field.value, "cat", byte);
      } else if (is(k, "name")) {
        name = text(field.value, "name", byte);
        has_name = true;
      } else if (is(k, "pid")) {
        pid = whole(field.value, "pid", byte, INT32_MAX);
        has_pid = true;
      } else if (is(k, "tid")) {
        tid = whole(field.value, "tid", byte);
        has_tid = true;
      } else if (is(k, "ts")) {
        ts = number(field.value, "ts", byte);
        has_ts = true;
      } else if (is(k, "dur")) {
        dur = number(field.value, "dur", byte);
        has_dur = true;
      } else if (is(k, "args")) {
        if (field.value.get_object().get(args))
          bad(byte,
              std::string("\"args\" is ") + type_name(field.value.type()) + ", not an object");
        has_args = true;
      }
    }
    if (!has_ph) bad(byte, "no \"ph\" (every trace event has its phase)");
    const auto need = [&](bool has, const char* field, const char* what) {
      if (!has) bad(byte, std::string(what) + " without \"" + field + "\"");
    };
    if (is(ph, "M") && has_name && is(name, "sluice_trace")) {
      trace_metadata m;
      m.present = true;
      if (has_args)
        for (const auto field : args) {
          const std::string_view k = field.key;
          const auto integer = [&](const char* what) {
            std::int64_t v = 0;
            if (field.value.get_int64().get(v))
              bad(byte, std::string("\"args.") + what + "\" is not a whole number");
            return v;
          };
          const auto small = [&](const char* what) {
            const std::int64_t v = integer(what);
            if (v < -1 || v > INT32_MAX)
              bad(byte, std::string("\"args.") + what + "\" is out of range");
            return static_cast<int>(v);
          };
          if (is(k, "origin_steady_ns"))
            m.origin_steady_ns = integer("origin_steady_ns");
          else if (is(k, "host"))
            m.host = std::string(text(field.value, "args.host", byte));
          else if (is(k, "rank"))
            m.rank = small("rank");
          else if (is(k, "ranks"))
            m.ranks = small("ranks");
          else if (is(k, "clock_reference_rank"))
            m.clock_reference_rank = small("clock_reference_rank");
          else if (is(k, "clock_offset_ns"))
            m.clock_offset_ns = integer("clock_offset_ns");
          else if (is(k, "clock_offset_error_ns"))
            m.clock_offset_error_ns = integer("clock_offset_error_ns");
          else if (is(k, "clock_same_host")) {
            bool same = false;
            if (field.value.get_bool().get(same))
              bad(byte, "\"args.clock_same_host\" is not a boolean");
            m.clock_same_host = same;
          }
        }
      sink_.metadata(m);
      return;
    }
    if (is(ph, "M") && has_name && (is(name, "thread_name") || is(name, "process_name"))) {
      need(has_pid, "pid",
           is(name, "thread_name") ? "a thread_name event" : "a process_name event");
      if (!has_args) return;
      if (is(name, "thread_name")) {
        need(has_tid, "tid", "a thread_name event");
        stream_track t;
        for (const auto field : args) {
          const std::string_view k = field.key;
          if (is(k, "name")) {
            t.track = std::string(text(field.value, "args.name", byte));
          } else if (is(k, "stream_name")) {
            t.name = std::string(text(field.value, "args.stream_name", byte));
          } else if (is(k, "native_priority")) {
            std::int64_t priority = 0;
            if (field.value.get_int64().get(priority) || priority < INT32_MIN ||
                priority > INT32_MAX)
              bad(byte, "\"args.native_priority\" is not a whole number of the int range");
            t.has_priority = true;
            t.native_priority = static_cast<int>(priority);
          }
        }
        sink_.track(static_cast<int>(pid), tid, t);
      } else {
        for (const auto field : args)
          if (is(field.key, "clock_error_us")) {
            const double error = number(field.value, "args.clock_error_us", byte);
            if (error < 0) bad(byte, "\"args.clock_error_us\" is negative");
            sink_.clock_error(static_cast<int>(pid), error);
          } else if (is(field.key, "trace_source")) {
            sink_.source(std::string(text(field.value, "args.trace_source", byte)), -1);
          }
      }
      return;
    }
    if (!is(ph, "X") || (!is(cat, "op") && !is(cat, "range") && !is(cat, "comm"))) return;
    const char* what = is(cat, "op")     ? "an operation (\"cat\": \"op\")"
                       : is(cat, "comm") ? "a communication span (\"cat\": \"comm\")"
                                         : "a trace_range";
    need(has_pid, "pid", what);
    need(has_tid, "tid", what);
    need(has_ts, "ts", what);
    need(has_dur, "dur", what);
    if (dur < 0) {
      char text[64];
      std::snprintf(text, sizeof text, "%g", dur);
      bad(byte, std::string(what) + " of negative duration (\"dur\": " + text + ")");
    }
    if (is(cat, "range") || is(cat, "comm")) {
      traced_range r;
      r.device = static_cast<int>(pid);
      r.stream = tid;
      r.name = std::string(name);
      r.start_us = ts;
      r.end_us = ts + dur;
      r.comm = is(cat, "comm");
      if (r.comm && has_args)
        for (const auto field : args) {
          const std::string_view k = field.key;
          if (is(k, "engine"))
            r.engine = std::string(text(field.value, "args.engine", byte));
          else if (is(k, "bytes"))
            r.bytes = whole(field.value, "args.bytes", byte);
        }
      sink_.range(r);
      return;
    }
    op_.device = static_cast<int>(pid);
    op_.stream = tid;
    if (has_name)
      op_.kind.assign(name.data(), name.size());
    else
      op_.kind = "op";
    op_.start_us = ts;
    op_.end_us = ts + dur;
    op_.seq = op_.waits_for_stream = op_.waits_for_seq = 0;
    op_.kernel = op_.has_enqueue = false;
    op_.enqueued_us = 0;
    op_.on_host = op_.kind == "host_func";
    if (has_args)
      for (const auto field : args) {
        const std::string_view k = field.key;
        if (is(k, "kind")) {
          std::string_view v;
          if (field.value.get_string().get(v)) bad(byte, "\"args.kind\" is not a string");
          op_.kernel = v == "kernel";
          if (v == "host_func") op_.on_host = true;
        } else if (is(k, "enqueued_us")) {
          op_.enqueued_us = number(field.value, "args.enqueued_us", byte);
          op_.has_enqueue = true;
        } else if (is(k, "path")) {
          if (text(field.value, "args.path", byte) == "host") op_.on_host = true;
        } else if (is(k, "seq"))
          op_.seq = whole(field.value, "args.seq", byte);
        else if (is(k, "waits_for_stream"))
          op_.waits_for_stream = whole(field.value, "args.waits_for_stream", byte);
        else if (is(k, "waits_for_seq"))
          op_.waits_for_seq = whole(field.value, "args.waits_for_seq", byte);
      }
    sink_.op(op_);
  }

  trace_sink& sink_;
  simdjson::dom::parser parser_;
  at state_ = at::document;
  bool in_object_ = false, seen_events_ = false;
  std::string key_;
  std::uint64_t offset_ = 0;  // of the block being fed
  std::uint64_t events_ = 0;
  // The value being captured.
  bool capturing_ = false;
  kind cap_kind_ = scalar;
  role role_ = a_value;
  std::uint64_t cap_byte_ = 0;
  std::size_t cap_from_ = 0;  // in the block being fed
  std::string cap_;           // its bytes from earlier blocks
  bool in_string_ = false, escape_ = false;
  std::size_t depth_ = 0;
  char open_[max_depth] = {};
  traced_op op_;
};

// --- the operations of each stream, in a temporary file ------------------------------

struct op_record {
  double start = 0, end = 0;
  double enqueued = 0;  // with has_enqueue
  std::uint64_t seq = 0, waits_for_stream = 0, waits_for_seq = 0;
  std::uint32_t kind = 0;
  std::uint8_t wait = 0, has_enqueue = 0, on_host = 0;
};
using interval = std::pair<double, double>;

//! An unlinked temporary file ($TMPDIR, else /tmp) that records go to in blocks.
class spill_file {
 public:
  spill_file() {
    const char* dir = std::getenv("TMPDIR");
    std::string path =
        std::string(dir != nullptr && *dir != '\0' ? dir : "/tmp") + "/sluice-trace-report-XXXXXX";
    fd_ = ::mkstemp(path.data());
    if (fd_ < 0)
      throw std::runtime_error("cannot make a temporary file " + path + ": " +
                               std::strerror(errno));
    ::unlink(path.c_str());
  }
  ~spill_file() { ::close(fd_); }
  spill_file(const spill_file&) = delete;
  spill_file& operator=(const spill_file&) = delete;

  std::uint64_t append(const void* data, std::size_t n) {
    const std::uint64_t at = end_;
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::pwrite(fd_, p, n, static_cast<off_t>(end_));
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0)
        throw std::runtime_error(std::string("cannot write the temporary file: ") +
                                 std::strerror(errno));
      p += w;
      n -= static_cast<std::size_t>(w);
      end_ += static_cast<std::uint64_t>(w);
    }
    return at;
  }
  void read(std::uint64_t at, void* data, std::size_t n) const {
    char* p = static_cast<char*>(data);
    while (n > 0) {
      const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(at));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw std::runtime_error(std::string("cannot read the temporary file: ") +
                                 std::strerror(errno));
      p += r;
      n -= static_cast<std::size_t>(r);
      at += static_cast<std::uint64_t>(r);
    }
  }

 private:
  int fd_ = -1;
  std::uint64_t end_ = 0;
};

//! One stream's records: in the file, a block of `block` records each, the
//! last still in memory until flush().
template <typename R>
class record_log {
 public:
  static constexpr std::size_t block = 1024;

  void push(spill_file& f, const R& r) {
    tail_.push_back(r);
    ++size_;
    if (tail_.size() == block) {
      offsets_.push_back(f.append(tail_.data(), block * sizeof(R)));
      tail_.clear();
    }
  }
  void flush(spill_file& f) {
    if (tail_.empty()) return;
    offsets_.push_back(f.append(tail_.data(), tail_.size() * sizeof(R)));
    std::vector<R>().swap(tail_);
  }
  std::size_t size() const { return size_; }
  //! Block b's records (after flush()).
  void read_block(const spill_file& f, std::size_t b, std::vector<R>& into) const {
    into.resize(std::min(block, size_ - b * block));
    f.read(offsets_[b], into.data(), into.size() * sizeof(R));
  }

 private:
  std::vector<R> tail_;
  std::vector<std::uint64_t> offsets_;
  std::size_t size_ = 0;
};

//! Reads a record_log front to back.
template <typename R>
class log_reader {
 public:
  log_reader(const spill_file& f, const record_log<R>& log) : f_(f), log_(log) {}
  bool next(R& r) {
    if (at_ == log_.size()) return false;
    if (at_ % record_log<R>::block == 0) log_.read_block(f_, at_ / record_log<R>::block, buf_);
    r = buf_[at_++ % record_log<R>::block];
    return true;
  }

 private:
  const spill_file& f_;
  const record_log<R>& log_;
  std::vector<R> buf_;
  std::size_t at_ = 0;
};

// --- interval arithmetic ----------------------------------------------------------

using intervals = std::vector<interval>;

intervals merged(intervals v) {
  std::sort(v.begin(), v.end());
  intervals out;
  for (const auto& x : v) {
    if (x.second <= x.first) continue;
    if (!out.empty() && x.first <= out.back().second)
      out.back().second = std::max(out.back().second, x.second);
    else
      out.push_back(x);
  }
  return out;
}

//! The length of the intersection of two streams' busy intervals (each
//! merged, in order), read from the file.
double intersection(const spill_file& f, const record_log<interval>& a,
                    const record_log<interval>& b) {
  log_reader<interval> ra(f, a), rb(f, b);
  interval x, y;
  bool hx = ra.next(x), hy = rb.next(y);
  double n = 0;
  while (hx && hy) {
    const double lo = std::max(x.first, y.first);
    const double hi = std::min(x.second, y.second);
    if (hi > lo) n += hi - lo;
    if (x.second < y.second)
      hx = ra.next(x);
    else
      hy = rb.next(y);
  }
  return n;
}

bool is_wait(const std::string& kind) { return kind == "wait" || kind == "wait_value"; }

std::string label_of(const stream_summary& s) { return stream_label(s.device, s.stream, s.name); }

std::string us(double v) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f us", v);
  return text;
}

//! A name inside a gnuplot single-quoted string: quotes doubled, control
//! characters as spaces.
std::string gnuplot_text(const std::string& text) {
  std::string out;
  for (const char c : text) {
    if (c == '\'')
      out += "''";
    else if (static_cast<unsigned char>(c) < 0x20)
      out += ' ';
    else
      out += c;
  }
  return out;
}

//! A trace_sink that keeps everything (read_trace).
struct collector : trace_sink {
  std::vector<traced_op> ops;
  stream_tracks* tracks = nullptr;
  std::map<int, double>* clock_errors = nullptr;
  std::vector<traced_range>* ranges = nullptr;
  void track(int device, std::uint64_t stream, const stream_track& t) override {
    if (tracks != nullptr) (*tracks)[{device, stream}] = t;
  }
  void clock_error(int device, double us) override {
    if (clock_errors != nullptr) (*clock_errors)[device] = us;
  }
  void op(const traced_op& o) override { ops.push_back(o); }
  void range(const traced_range& r) override {
    if (ranges != nullptr) ranges->push_back(r);
  }
};

constexpr std::size_t max_drawn_ranges = 100000;

}  // namespace

std::string stream_label(int device, std::uint64_t stream, const std::string& name) {
  const int rank = rank_of_stream(stream);
  const std::uint64_t id = stream & ((std::uint64_t{1} << rank_shift) - 1);
  return (rank >= 0 ? "r" + std::to_string(rank) + "/" : std::string()) + "d" +
         std::to_string(device) + "/s" + std::to_string(id) + (name.empty() ? "" : " " + name);
}

std::vector<rank_alignment> align_ranks(const std::vector<trace_metadata>& files) {
  std::vector<rank_alignment> out(files.size());
  std::map<int, std::size_t> seen;
  for (std::size_t i = 0; i < files.size(); ++i) {
    out[i].rank = files[i].rank >= 0 ? files[i].rank : static_cast<int>(i);
    const auto [it, fresh] = seen.emplace(out[i].rank, i);
    if (!fresh)
      throw std::runtime_error("files " + std::to_string(it->second + 1) + " and " +
                               std::to_string(i + 1) + " are both rank " +
                               std::to_string(out[i].rank) + " (one file per rank)");
    if (out[i].rank > 65534)
      throw std::runtime_error("rank " + std::to_string(out[i].rank) + " is too large");
  }
  if (files.empty()) return out;
  // The reference: the rank the offsets were measured against, if among the files.
  std::size_t ref = 0;
  for (std::size_t i = 0; i < files.size(); ++i)
    if (files[i].clock_reference_rank >= 0) {
      const auto it = seen.find(files[i].clock_reference_rank);
      if (it != seen.end()) ref = it->second;
      break;
    }
  const trace_metadata& r = files[ref];
  std::vector<double> place(files.size());  // origin on the reference's clock, ns
  for (std::size_t i = 0; i < files.size(); ++i) {
    const trace_metadata& f = files[i];
    rank_alignment& al = out[i];
    std::int64_t offset = 0;
    if (i == ref) {
      al.how = "reference clock";
    } else if (!f.host.empty() && f.host == r.host) {
      al.how = "same host as the reference: same steady clock, exact";
    } else if (f.clock_reference_rank >= 0 && f.clock_reference_rank == out[ref].rank) {
      offset = f.clock_offset_ns;
      al.error_us = static_cast<double>(f.clock_offset_error_ns) / 1000.0;
      al.how = "clock offset measured at communicator creation";
    } else if (!f.present || !r.present) {
      al.how = "not aligned: a trace without sluice_trace metadata (times from its own start)";
    } else {
      al.how = "not aligned: another host and no clock offset against the reference's rank";
    }
    const bool aligned = al.how.rfind("not aligned", 0) != 0;
    place[i] = aligned ? static_cast<double>(f.origin_steady_ns - offset) : 0.0;
  }
  // Unaligned files start where the reference starts.
  for (std::size_t i = 0; i < files.size(); ++i)
    if (out[i].how.rfind("not aligned", 0) == 0) place[i] = place[ref];
  const double base = *std::min_element(place.begin(), place.end());
  for (std::size_t i = 0; i < files.size(); ++i) out[i].shift_us = (place[i] - base) / 1000.0;
  return out;
}

namespace {

//! Reads only a trace's metadata.
struct metadata_sink : trace_sink {
  trace_metadata m;
  void track(int, std::uint64_t, const stream_track&) override {}
  void clock_error(int, double) override {}
  void op(const traced_op&) override {}
  void range(const traced_range&) override {}
  void metadata(const trace_metadata& t) override { m = t; }
};

//! Hands one rank's events on: times shifted, streams marked with the rank.
struct rank_sink : trace_sink {
  trace_sink& to;
  int rank;
  double shift;
  rank_sink(trace_sink& t, int r, double s) : to(t), rank(r), shift(s) {}
  std::uint64_t id(std::uint64_t stream) const {
    if (stream >> rank_shift != 0)
      throw std::runtime_error("stream id " + std::to_string(stream) + " is too large to merge");
    return merged_stream(rank, stream);
  }
  void track(int device, std::uint64_t stream, const stream_track& t) override {
    to.track(device, id(stream), t);
  }
  void clock_error(int device, double us) override {
    // Keyed by rank too: (rank + 1) * 1000 + device (format_report shows it).
    to.clock_error((rank + 1) * 1000 + device, us);
  }
  void op(const traced_op& o) override {
    traced_op m = o;
    m.stream = id(o.stream);
    if (m.waits_for_stream != 0) m.waits_for_stream = id(o.waits_for_stream);
    m.start_us += shift;
    m.end_us += shift;
    m.enqueued_us += shift;
    to.op(m);
  }
  void range(const traced_range& r) override {
    traced_range m = r;
    m.stream = id(r.stream);
    m.start_us += shift;
    m.end_us += shift;
    to.range(m);
  }
  void metadata(const trace_metadata& m) override { to.metadata(m); }
  void source(const std::string& source_name, int) override { to.source(source_name, rank); }
};

}  // namespace

trace_metadata read_trace_metadata(const std::string& path) {
  metadata_sink m;
  read_trace_file(path, m);
  return m.m;
}

void read_rank_files(const std::vector<std::string>& files, trace_analyzer& into,
                     std::vector<rank_alignment>* alignment) {
  std::vector<trace_metadata> meta;
  for (const std::string& f : files) {
    try {
      meta.push_back(read_trace_metadata(f));
    } catch (const std::exception& e) {
      throw std::runtime_error(f + ": " + e.what());
    }
  }
  std::vector<rank_alignment> al = align_ranks(meta);
  for (std::size_t i = 0; i < files.size(); ++i) {
    al[i].file = files[i];
    rank_sink sink(into, al[i].rank, al[i].shift_us);
    try {
      read_trace_file(files[i], sink);
    } catch (const std::exception& e) {
      throw std::runtime_error(files[i] + ": " + e.what());
    }
  }
  into.note_alignment(al);
  if (alignment != nullptr) *alignment = al;
}

void read_trace_events(const trace_source& source, trace_sink& sink) {
  event_reader reader(sink);
  // One block per thread, kept: a reader per small input (the fuzz target)
  // does not map and zero a fresh megabyte each time.
  thread_local std::vector<char> block(block_size + simdjson::SIMDJSON_PADDING);
  for (;;) {
    const std::size_t n = source(block.data(), block_size);
    if (n == 0) break;
    reader.feed(block.data(), n);
  }
  reader.end();
}

void read_trace_file(const std::string& path, trace_sink& sink) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(std::string("cannot read: ") + std::strerror(errno));
  struct closer {
    int fd;
    ~closer() { ::close(fd); }
  } close_it{fd};
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode))
    throw std::runtime_error("is a directory, not a trace file");
  read_trace_events(
      [fd](char* into, std::size_t size) {
        for (;;) {
          const ssize_t n = ::read(fd, into, size);
          if (n >= 0) return static_cast<std::size_t>(n);
          if (errno != EINTR)
            throw std::runtime_error(std::string("cannot read: ") + std::strerror(errno));
        }
      },
      sink);
}

std::vector<traced_op> read_trace(const std::string& json, stream_tracks* tracks,
                                  std::map<int, double>* clock_errors,
                                  std::vector<traced_range>* ranges) {
  collector c;
  c.tracks = tracks;
  c.clock_errors = clock_errors;
  c.ranges = ranges;
  std::size_t at = 0;
  read_trace_events(
      [&](char* into, std::size_t size) {
        const std::size_t n = std::min(size, json.size() - at);
        std::copy_n(json.data() + at, n, into);
        at += n;
        return n;
      },
      c);
  return std::move(c.ops);
}

// --- the analysis, an event at a time ------------------------------------------------

namespace {

struct stream_state {
  int device = 0;
  std::uint64_t id = 0;
  record_log<op_record> ops;
  bool seq_sorted = true;
  std::uint64_t last_seq = 0;
  record_log<interval> busy;                   // after finish()
  record_log<interval> in_flight;              // after finish()
  std::vector<std::uint64_t> block_first_seq;  // of ops' blocks, after finish()
};

struct range_acc {
  range_summary s;
  double first_start = 0;
  std::uint64_t first_index = 0;
};

struct comm_acc {
  trace_analysis::comm_summary s;
  int device = 0;
  std::uint64_t stream = 0;
  double first_start = 0;
};

}  // namespace

struct trace_analyzer::state {
  std::unique_ptr<spill_file> file;
  std::vector<std::unique_ptr<stream_state>> streams;
  std::unordered_map<std::uint64_t, std::size_t> index;  // stream id -> streams
  std::uint64_t last_id = 0;
  std::size_t last_index = SIZE_MAX;
  stream_tracks tracks;
  std::map<int, double> clock_errors;
  std::map<std::string, std::uint32_t, std::less<>> kind_ids;
  std::vector<std::string> kinds;
  std::size_t operations = 0;
  double first = 0, last = 0;
  bool any = false;
  std::map<std::pair<std::uint64_t, std::string>, std::size_t> range_index;
  std::vector<range_acc> ranges;
  // sluice::comm's spans: per stream and name, and their intervals per rank.
  std::map<std::pair<std::uint64_t, std::string>, std::size_t> comm_index;
  std::vector<comm_acc> comm;
  std::map<int, intervals> comm_spans;
  // Kernels per (stream index, name id): count, time, order of first sight.
  struct kernel_acc {
    std::size_t count = 0;
    double total_us = 0;
    std::size_t first = 0;
  };
  std::map<std::pair<std::size_t, std::uint32_t>, kernel_acc> kernels;
  std::size_t kernel_order = 0;
  std::uint64_t range_count = 0;
  bool timeline = true;
  std::vector<traced_range> drawn_ranges;  // the first max_drawn_ranges, for the timeline
  std::map<int, std::string> sources;      // per rank: trace_source
  trace_analysis a;
  bool finished = false;

  spill_file& spill() {
    if (!file) file = std::make_unique<spill_file>();
    return *file;
  }

  //! The block of a stream's operations that record k is in: a few cached.
  struct cached {
    std::size_t stream = SIZE_MAX, block = 0;
    std::uint64_t used = 0;
    std::vector<op_record> records;
  };
  std::vector<cached> cache = std::vector<cached>(16);
  std::uint64_t uses = 0;
  const op_record& record(std::size_t stream, std::size_t k) {
    const std::size_t b = k / record_log<op_record>::block;
    cached* slot = &cache[0];
    for (cached& c : cache) {
      if (c.stream == stream && c.block == b) {
        c.used = ++uses;
        return c.records[k % record_log<op_record>::block];
      }
      if (c.used < slot->used) slot = &c;
    }
    streams[stream]->ops.read_block(*file, b, slot->records);
    slot->stream = stream;
    slot->block = b;
    slot->used = ++uses;
    return slot->records[k % record_log<op_record>::block];
  }
  //! The last of a stream's operations whose seq is `seq`; false if none.
  bool find_seq(std::size_t stream, std::uint64_t seq, std::size_t* k) {
    const auto& firsts = streams[stream]->block_first_seq;
    const auto after = std::upper_bound(firsts.begin(), firsts.end(), seq);
    if (after == firsts.begin()) return false;
    const std::size_t b = static_cast<std::size_t>(after - firsts.begin()) - 1;
    const std::size_t from = b * record_log<op_record>::block;
    const std::size_t to =
        std::min(from + record_log<op_record>::block, streams[stream]->ops.size());
    // Within the block: the last record with a seq <= `seq`.
    std::size_t lo = from, hi = to;  // answer in [lo, hi)
    while (hi - lo > 1) {
      const std::size_t mid = lo + (hi - lo) / 2;
      if (record(stream, mid).seq <= seq)
        lo = mid;
      else
        hi = mid;
    }
    if (record(stream, lo).seq != seq) return false;
    *k = lo;
    return true;
  }

  //! Stream i's in-flight intervals, merged into its in_flight log; returns
  //! their total (stream_summary::in_flight_us says what they are). After
  //! every stream's operations are in seq order with their block_first_seq
  //! (a wait's source may be on any stream).
  double in_flight(std::size_t i) {
    stream_state& st = *streams[i];
    spill_file& f = *file;
    // Calls emit(interval) for each operation, in seq order.
    const auto each = [&](const auto& emit) {
      bool has_ready = false;
      double ready = 0;  // the latest end of the stream's operations so far
      const auto ended = [&](double t) {
        ready = has_ready ? std::max(ready, t) : t;
        has_ready = true;
      };
      log_reader<op_record> r(f, st.ops);
      op_record o;
      while (r.next(o)) {
        if (o.wait != 0) {
          ended(o.end);
          std::size_t k = 0;
          const auto source =
              o.waits_for_stream != 0 ? index.find(o.waits_for_stream) : index.end();
          if (source != index.end() && find_seq(source->second, o.waits_for_seq, &k))
            ended(record(source->second, k).end);
          continue;
        }
        if (o.end > o.start) {
          double from = o.start;
          if (o.has_enqueue != 0 && o.on_host == 0)
            from = std::min(o.start, has_ready ? std::max(o.enqueued, ready) : o.enqueued);
          emit(interval{from, o.end});
        }
        ended(o.end);
      }
    };
    double total = 0;
    bool in_order = true, open = false;
    interval cur;
    each([&](const interval& x) {
      if (!in_order) return;
      if (open && x.first < cur.first) {
        in_order = false;
        return;
      }
      if (open && x.first <= cur.second) {
        cur.second = std::max(cur.second, x.second);
        return;
      }
      if (open) {
        st.in_flight.push(f, cur);
        total += cur.second - cur.first;
      }
      cur = x;
      open = true;
    });
    if (in_order) {
      if (open) {
        st.in_flight.push(f, cur);
        total += cur.second - cur.first;
      }
    } else {
      // Starts out of order: merged in memory.
      intervals all;
      each([&](const interval& x) { all.push_back(x); });
      st.in_flight = record_log<interval>();
      total = 0;
      for (const interval& x : merged(std::move(all))) {
        st.in_flight.push(f, x);
        total += x.second - x.first;
      }
    }
    st.in_flight.flush(f);
    return total;
  }
};

trace_analyzer::trace_analyzer(bool timeline) : s_(std::make_unique<state>()) {
  s_->timeline = timeline;
}
trace_analyzer::~trace_analyzer() = default;

void trace_analyzer::track(int device, std::uint64_t stream, const stream_track& t) {
  s_->tracks[{device, stream}] = t;
}

void trace_analyzer::clock_error(int device, double us) { s_->clock_errors[device] = us; }

void trace_analyzer::op(const traced_op& o) {
  state& s = *s_;
  if (s.finished) throw std::logic_error("trace_analyzer::op after finish()");
  std::size_t i = s.last_index;
  if (i == SIZE_MAX || s.last_id != o.stream) {
    const auto [it, fresh] = s.index.emplace(o.stream, s.streams.size());
    if (fresh) {
      s.streams.push_back(std::make_unique<stream_state>());
      s.streams.back()->device = o.device;
      s.streams.back()->id = o.stream;
    }
    i = it->second;
    s.last_index = i;
    s.last_id = o.stream;
  }
  stream_state& st = *s.streams[i];
  op_record r;
  r.start = o.start_us;
  r.end = o.end_us;
  r.seq = o.seq;
  r.waits_for_stream = o.waits_for_stream;
  r.waits_for_seq = o.waits_for_seq;
  auto kind = s.kind_ids.find(o.kind);
  if (kind == s.kind_ids.end()) {
    kind = s.kind_ids.emplace(o.kind, static_cast<std::uint32_t>(s.kinds.size())).first;
    s.kinds.push_back(o.kind);
  }
  r.kind = kind->second;
  r.wait = is_wait(o.kind) ? 1 : 0;
  r.has_enqueue = o.has_enqueue ? 1 : 0;
  r.enqueued = o.enqueued_us;
  r.on_host = o.on_host ? 1 : 0;
  if (o.kernel) {
    auto& k = s.kernels[{i, r.kind}];
    if (k.count == 0) k.first = s.kernel_order++;
    ++k.count;
    k.total_us += o.end_us - o.start_us;
  }
  if (st.ops.size() > 0 && o.seq < st.last_seq) st.seq_sorted = false;
  st.last_seq = o.seq;
  st.ops.push(s.spill(), r);
  ++s.operations;
  s.first = s.any ? std::min(s.first, o.start_us) : o.start_us;
  s.last = s.any ? std::max(s.last, o.end_us) : o.end_us;
  s.any = true;
}

void trace_analyzer::source(const std::string& source_name, int rank) {
  s_->sources[rank] = source_name;
}

void trace_analyzer::note_alignment(const std::vector<rank_alignment>& alignment) {
  s_->a.alignment = alignment;
}

void trace_analyzer::range(const traced_range& r) {
  state& s = *s_;
  const std::uint64_t number = s.range_count++;
  if (s.timeline && s.drawn_ranges.size() < max_drawn_ranges) s.drawn_ranges.push_back(r);
  const double d = r.end_us - r.start_us;
  if (r.comm) {
    // A comm operation: its own table, not the trace_ranges'.
    const auto [it, fresh] = s.comm_index.emplace(std::make_pair(r.stream, r.name), s.comm.size());
    if (fresh) {
      comm_acc acc;
      acc.device = r.device;
      acc.stream = r.stream;
      acc.s.name = r.name;
      acc.s.engine = r.engine;
      acc.first_start = r.start_us;
      s.comm.push_back(std::move(acc));
    }
    comm_acc& acc = s.comm[it->second];
    acc.first_start = std::min(acc.first_start, r.start_us);
    ++acc.s.count;
    acc.s.bytes += r.bytes;
    acc.s.total_us += d;
    s.comm_spans[rank_of_stream(r.stream)].emplace_back(r.start_us, r.end_us);
    return;
  }
  const auto [it, fresh] = s.range_index.emplace(std::make_pair(r.stream, r.name), s.ranges.size());
  if (fresh) {
    range_acc acc;
    acc.s.device = r.device;
    acc.s.stream = r.stream;
    acc.s.name = r.name;
    acc.s.shortest_us = acc.s.longest_us = d;
    acc.first_start = r.start_us;
    acc.first_index = number;
    s.ranges.push_back(std::move(acc));
  }
  range_acc& acc = s.ranges[it->second];
  if (r.start_us < acc.first_start) {
    acc.first_start = r.start_us;
    acc.first_index = number;
    acc.s.device = r.device;
  }
  ++acc.s.count;
  acc.s.total_us += d;
  acc.s.shortest_us = std::min(acc.s.shortest_us, d);
  acc.s.longest_us = std::max(acc.s.longest_us, d);
}

const trace_analysis& trace_analyzer::finish() {
  state& s = *s_;
  if (s.finished) return s.a;
  s.finished = true;
  trace_analysis& a = s.a;
  a.operations = s.operations;
  a.span_us = s.any ? s.last - s.first : 0;
  a.clock_error_us = s.clock_errors;
  constexpr std::size_t block = record_log<op_record>::block;
  // Per stream, its operations in seq order (sorted here only where the
  // trace had them out of order), then one pass: busy intervals merged as
  // they come (their starts in order, as a stream runs them; otherwise
  // sorted), waits, span.
  double latest = -1;
  std::size_t si = 0, sk = 0;
  for (std::size_t i = 0; i < s.streams.size(); ++i) {
    stream_state& st = *s.streams[i];
    spill_file& f = *s.file;
    st.ops.flush(f);
    if (!st.seq_sorted) {
      std::vector<op_record> all;
      {
        log_reader<op_record> r(f, st.ops);
        op_record o;
        while (r.next(o)) all.push_back(o);
      }
      std::sort(all.begin(), all.end(),
                [](const op_record& x, const op_record& y) { return x.seq < y.seq; });
      st.ops = record_log<op_record>();
      for (const op_record& o : all) st.ops.push(f, o);
      st.ops.flush(f);
    }
    stream_summary sum;
    sum.device = st.device;
    sum.stream = st.id;
    const auto t = s.tracks.find({st.device, st.id});
    if (t != s.tracks.end()) {
      sum.name = t->second.name;
      sum.about = t->second.has_priority
                      ? "native priority " + std::to_string(t->second.native_priority)
                      : t->second.track;
    }
    sum.operations = st.ops.size();
    double lo = 0, hi = 0;
    bool in_order = true, open = false, started = false;
    double last_start = 0;
    interval cur;
    const auto close = [&] {
      if (!open) return;
      st.busy.push(f, cur);
      sum.busy_us += cur.second - cur.first;
    };
    log_reader<op_record> r(f, st.ops);
    op_record o;
    for (std::size_t k = 0; r.next(o); ++k) {
      if (k % block == 0) st.block_first_seq.push_back(o.seq);
      if (o.end > latest) {
        latest = o.end;
        si = i;
        sk = k;
      }
      lo = k == 0 ? o.start : std::min(lo, o.start);
      hi = k == 0 ? o.end : std::max(hi, o.end);
      if (o.wait != 0) {
        ++sum.waits;
        sum.waiting_us += o.end - o.start;
        continue;
      }
      if (!in_order || o.end <= o.start) continue;
      if (started && o.start < last_start) {
        in_order = false;
        continue;
      }
      started = true;
      last_start = o.start;
      if (open && o.start <= cur.second) {
        cur.second = std::max(cur.second, o.end);
      } else {
        if (open) {
          sum.largest_gap_us = std::max(sum.largest_gap_us, o.start - cur.second);
          close();
        }
        cur = {o.start, o.end};
        open = true;
      }
    }
    if (in_order) {
      close();
    } else {
      // Starts out of order: this stream's busy intervals sorted in memory.
      intervals mine;
      log_reader<op_record> again(f, st.ops);
      while (again.next(o))
        if (o.wait == 0) mine.emplace_back(o.start, o.end);
      const intervals busy = merged(std::move(mine));
      st.busy = record_log<interval>();
      sum.busy_us = 0;
      sum.largest_gap_us = 0;
      for (std::size_t k = 0; k < busy.size(); ++k) {
        st.busy.push(f, busy[k]);
        sum.busy_us += busy[k].second - busy[k].first;
        if (k > 0)
          sum.largest_gap_us = std::max(sum.largest_gap_us, busy[k].first - busy[k - 1].second);
      }
    }
    st.busy.flush(f);
    sum.span_us = hi - lo;
    sum.idle_us = std::max(0.0, sum.span_us - sum.busy_us);
    a.streams.push_back(sum);
  }
  for (std::size_t i = 0; i < s.streams.size(); ++i) a.streams[i].in_flight_us = s.in_flight(i);
  a.trace_sources = s.sources;
  for (std::size_t i = 0; i < a.streams.size(); ++i)
    for (std::size_t j = i + 1; j < a.streams.size(); ++j) {
      // Several ranks: overlap within each rank (their clocks are apart).
      if (rank_of_stream(a.streams[i].stream) != rank_of_stream(a.streams[j].stream)) continue;
      // In flight covers busy: a stream with no in-flight time has no busy time.
      const double shorter = std::min(a.streams[i].in_flight_us, a.streams[j].in_flight_us);
      if (shorter <= 0) continue;
      overlap_pair p;
      p.a = i;
      p.b = j;
      p.overlap_us = intersection(*s.file, s.streams[i]->in_flight, s.streams[j]->in_flight);
      p.percent_of_shorter = 100.0 * p.overlap_us / shorter;
      const double shorter_busy = std::min(a.streams[i].busy_us, a.streams[j].busy_us);
      p.busy_overlap_us = intersection(*s.file, s.streams[i]->busy, s.streams[j]->busy);
      p.busy_percent = shorter_busy > 0 ? 100.0 * p.busy_overlap_us / shorter_busy : 0.0;
      a.overlaps.push_back(p);
    }
  // The critical path, backwards from the operation that ended last: a wait
  // that ended when its source did continues at the source, anything else at
  // the previous operation of its stream.
  if (s.any) {
    std::map<std::size_t, std::size_t> counts;
    double start = latest;
    std::size_t k = sk;
    for (std::size_t guard = 0; guard <= s.operations; ++guard) {
      const op_record o = s.record(si, k);
      ++counts[si];
      ++a.path.operations;
      start = o.start;
      bool has_prev = k > 0;
      double prev_end = has_prev ? s.record(si, k - 1).end : 0;
      std::size_t source_stream = 0, source_k = 0;
      bool source = false;
      if (o.waits_for_stream != 0) {
        const auto it = s.index.find(o.waits_for_stream);
        if (it != s.index.end() && s.find_seq(it->second, o.waits_for_seq, &source_k)) {
          source = true;
          source_stream = it->second;
        }
      }
      if (source && (!has_prev || s.record(source_stream, source_k).end >= prev_end)) {
        si = source_stream;
        k = source_k;
      } else if (has_prev) {
        --k;
      } else {
        break;
      }
    }
    a.path.length_us = latest - start;
    for (const auto& c : counts) a.path.per_stream.emplace_back(c.first, c.second);
  }
  // Kernels per stream (the table's order) and name (first seen first).
  {
    std::vector<std::pair<std::pair<std::size_t, std::size_t>, kernel_summary>> listed;
    for (const auto& [key, k] : s.kernels) {
      kernel_summary ks;
      ks.stream_label = label_of(a.streams[key.first]);
      ks.name = s.kinds[key.second];
      ks.count = k.count;
      ks.total_us = k.total_us;
      listed.push_back({{key.first, k.first}, std::move(ks)});
    }
    std::sort(listed.begin(), listed.end(),
              [](const auto& x, const auto& y) { return x.first < y.first; });
    for (auto& l : listed) a.kernels.push_back(std::move(l.second));
  }
  // trace_ranges per stream (in the table's order; streams with ranges only
  // after them) and name (by first start).
  const auto order = [&](std::uint64_t stream) {
    const auto it = s.index.find(stream);
    return it != s.index.end() ? it->second : a.streams.size();
  };
  std::vector<const range_acc*> sorted;
  for (const range_acc& r : s.ranges) sorted.push_back(&r);
  std::sort(sorted.begin(), sorted.end(), [&](const range_acc* x, const range_acc* y) {
    const std::size_t ox = order(x->s.stream), oy = order(y->s.stream);
    if (ox != oy) return ox < oy;
    if (x->s.stream != y->s.stream) return x->s.stream < y->s.stream;
    if (x->first_start != y->first_start) return x->first_start < y->first_start;
    return x->first_index < y->first_index;
  });
  for (const range_acc* r : sorted) {
    range_summary rs = r->s;
    const auto t = s.tracks.find({rs.device, rs.stream});
    rs.stream_label = stream_label(rs.device, rs.stream, t != s.tracks.end() ? t->second.name : "");
    a.ranges.push_back(std::move(rs));
  }
  // Comm operations per stream (the table's order) and name (by first start).
  {
    std::vector<const comm_acc*> listed;
    for (const comm_acc& c : s.comm) listed.push_back(&c);
    std::sort(listed.begin(), listed.end(), [&](const comm_acc* x, const comm_acc* y) {
      const std::size_t ox = order(x->stream), oy = order(y->stream);
      if (ox != oy) return ox < oy;
      if (x->stream != y->stream) return x->stream < y->stream;
      return x->first_start < y->first_start;
    });
    for (const comm_acc* c : listed) {
      trace_analysis::comm_summary cs = c->s;
      const auto t = s.tracks.find({c->device, c->stream});
      cs.stream_label =
          stream_label(c->device, c->stream, t != s.tracks.end() ? t->second.name : "");
      a.comm.push_back(std::move(cs));
    }
  }
  // Per rank: the time its comm operations were in flight, and how much of it
  // its streams were busy (subtracting each stream's busy intervals, in order,
  // from what is still uncovered).
  for (auto& [rank, spans] : s.comm_spans) {
    intervals uncovered = merged(std::move(spans));
    trace_analysis::rank_comm rc;
    rc.rank = rank;
    for (const interval& x : uncovered) rc.comm_us += x.second - x.first;
    for (std::size_t i = 0; i < s.streams.size(); ++i) {
      if (rank_of_stream(s.streams[i]->id) != rank) continue;
      log_reader<interval> busy(*s.file, s.streams[i]->busy);
      intervals left;
      std::size_t u = 0;
      interval b;
      bool more = busy.next(b);
      for (; u < uncovered.size(); ++u) {
        interval x = uncovered[u];
        while (more && b.second <= x.first) more = busy.next(b);
        while (more && b.first < x.second) {
          if (b.first > x.first) left.emplace_back(x.first, b.first);
          x.first = std::max(x.first, b.second);
          if (x.first >= x.second) break;
          if (b.second <= x.second)
            more = busy.next(b);
          else
            break;
        }
        if (x.first < x.second) left.push_back(x);
      }
      uncovered.swap(left);
    }
    double still = 0;
    for (const interval& x : uncovered) still += x.second - x.first;
    rc.covered_us = rc.comm_us - still;
    a.comm_overlap.push_back(rc);
  }
  return a;
}

span_timing timing_of(const std::string& source_name) {
  if (source_name == "events") return span_timing::events;
  if (source_name == "cupti" || source_name == "host") return span_timing::executing;
  return span_timing::unnamed;
}

trace_analysis analyze(const std::vector<traced_op>& ops, const stream_tracks& tracks,
                       const std::vector<traced_range>& ranges, const std::string& source_name) {
  trace_analyzer z;
  if (!source_name.empty()) z.source(source_name, -1);
  for (const auto& t : tracks) z.track(t.first.first, t.first.second, t.second);
  for (const traced_op& o : ops) z.op(o);
  for (const traced_range& r : ranges) z.range(r);
  return z.finish();
}

namespace {

//! The report's line on what timed a trace's operations.
std::string timing_text(const std::string& source) {
  switch (timing_of(source)) {
    case span_timing::events:
      return "timing events (trace_source events): an operation's span runs from when its stream "
             "reached it (not before its enqueue) to its completion, time waiting for a copy "
             "engine or the SMs included: executing is not measured";
    case span_timing::executing:
      if (source == "cupti")
        return "CUPTI activity records (trace_source cupti): a device operation's span is its "
               "execution on the device: busy is executing";
      return "the host backend's workers (trace_source " + source +
             "): an operation's span is its run on a worker: busy is executing";
    case span_timing::unnamed: break;
  }
  if (source.empty()) return "not named in the trace (no trace_source): busy as its spans say";
  return "trace_source " + source + ", not known to this report: busy as its spans say";
}

}  // namespace

std::string format_report(const trace_analysis& a, const std::string& file) {
  std::ostringstream out;
  out << "trace: " << file << ": " << a.operations << " operations on " << a.streams.size()
      << " streams, " << us(a.span_us) << " from the first start to the last end\n";
  // What timed the operations: one line, or one per rank where the ranks' differ.
  std::vector<int> ranks;  // of the streams (a single trace: -1)
  for (const stream_summary& st : a.streams) {
    const int r = rank_of_stream(st.stream);
    if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) ranks.push_back(r);
  }
  std::sort(ranks.begin(), ranks.end());
  if (ranks.empty()) ranks.push_back(-1);
  const auto source_of = [&](int rank) {
    const auto it = a.trace_sources.find(rank);
    return it != a.trace_sources.end() ? it->second : std::string();
  };
  bool one_source = true;
  for (const int rank : ranks) one_source = one_source && source_of(rank) == source_of(ranks[0]);
  if (one_source) {
    out << "timing: " << timing_text(source_of(ranks[0])) << "\n";
  } else {
    for (const int rank : ranks)
      out << "timing on rank " << rank << ": " << timing_text(source_of(rank)) << "\n";
  }
  if (!a.clock_error_us.empty()) {
    // Device times were mapped onto the host clock: against host functions'
    // times (host clock) they may be off by this much.
    out << "device clocks (device times on the host clock within +-):";
    for (const auto& e : a.clock_error_us) {
      if (e.first >= 1000)  // merged traces: (rank + 1) * 1000 + device
        out << " r" << e.first / 1000 - 1 << "/device " << e.first % 1000 << " " << us(e.second);
      else
        out << " device " << e.first << " " << us(e.second);
    }
    out << "\n";
  }
  if (!a.alignment.empty()) {
    out << "ranks (one timeline: each file's times moved onto the reference rank's clock):\n";
    for (const rank_alignment& r : a.alignment) {
      out << "  r" << r.rank << ": " << r.file << ": " << r.how;
      if (r.error_us > 0) out << ", within +-" << us(r.error_us);
      char shift[48];
      std::snprintf(shift, sizeof shift, " (shifted by %.3f us)", r.shift_us);
      out << shift << "\n";
    }
  }
  out << "streams (busy: the union of its operations other than waits, as timed; in flight: the "
         "same, each from when it could start (enqueued, its stream's earlier operations done) to "
         "its end; idle: the rest of the stream's span):\n";
  for (const stream_summary& s : a.streams) {
    char pct[16];
    std::snprintf(pct, sizeof pct, "%.0f%%", s.span_us > 0 ? 100.0 * s.busy_us / s.span_us : 0.0);
    out << "  " << label_of(s) << (s.about.empty() ? "" : " (" + s.about + ")") << ": "
        << s.operations << " operations, busy " << us(s.busy_us) << " of " << us(s.span_us) << " ("
        << pct << "), in flight " << us(s.in_flight_us) << ", idle " << us(s.idle_us)
        << " (largest gap " << us(s.largest_gap_us) << "), " << s.waits << " waits ("
        << us(s.waiting_us) << ")\n";
  }
  // Overlap: within each rank (a single trace: one "rank").
  for (const int rank : ranks) {
    const std::string indent = rank >= 0 ? "    " : "  ";
    const span_timing timing = timing_of(source_of(rank));
    out << "overlap" << (rank >= 0 ? " on rank " + std::to_string(rank) : std::string())
        << " (in flight: both streams had an operation in flight at once, % of the shorter "
           "stream's in-flight time";
    if (timing == span_timing::executing)
      out << "; executing: both busy at once, % of the shorter stream's busy time";
    else if (timing == span_timing::events)
      out << "; executing: not measured (timing events cannot tell it from queued)";
    out << "):\n";
    std::vector<overlap_pair> pairs;
    for (const overlap_pair& p : a.overlaps)
      if (rank_of_stream(a.streams[p.a].stream) == rank) pairs.push_back(p);
    if (pairs.empty()) out << indent << "(fewer than two busy streams)\n";
    // The pairs that overlap most first; at most 20 of them.
    std::stable_sort(pairs.begin(), pairs.end(), [](const overlap_pair& x, const overlap_pair& y) {
      return x.overlap_us > y.overlap_us;
    });
    constexpr std::size_t shown = 20;
    if (pairs.size() > shown) {
      out << indent << "(the " << shown << " pairs with the most overlap of " << pairs.size()
          << ")\n";
      pairs.resize(shown);
    }
    for (const overlap_pair& p : pairs) {
      char pct[16];
      std::snprintf(pct, sizeof pct, "%.1f%%", p.percent_of_shorter);
      out << indent << label_of(a.streams[p.a]) << " x " << label_of(a.streams[p.b]) << ": "
          << us(p.overlap_us) << " (" << pct << ")";
      if (timing == span_timing::executing) {
        std::snprintf(pct, sizeof pct, "%.1f%%", p.busy_percent);
        out << ", executing " << us(p.busy_overlap_us) << " (" << pct << ")";
      }
      out << "\n";
    }
  }
  out << "critical path: " << us(a.path.length_us) << ", " << a.path.operations << " operations";
  for (std::size_t i = 0; i < a.path.per_stream.size(); ++i)
    out << (i == 0 ? ": " : ", ") << label_of(a.streams[a.path.per_stream[i].first]) << " "
        << a.path.per_stream[i].second;
  out << "\n";
  if (!a.kernels.empty()) {
    out << "kernels (launched through sluice::kokkos::submit; per stream and name):\n";
    constexpr std::size_t listed = 40;
    if (a.kernels.size() > listed)
      out << "  (the first " << listed << " of " << a.kernels.size() << " stream and name pairs)\n";
    for (std::size_t i = 0; i < std::min(listed, a.kernels.size()); ++i) {
      const kernel_summary& k = a.kernels[i];
      out << "  " << k.stream_label << ": \"" << k.name << "\" " << k.count
          << (k.count == 1 ? " kernel, " : " kernels, ") << us(k.total_us) << "\n";
    }
  }
  if (!a.comm.empty()) {
    out << "communication (sluice::comm: from the stream's arrival to the done flag; per stream "
           "and operation):\n";
    constexpr std::size_t listed = 40;
    if (a.comm.size() > listed)
      out << "  (the first " << listed << " of " << a.comm.size()
          << " stream and operation pairs)\n";
    for (std::size_t i = 0; i < std::min(listed, a.comm.size()); ++i) {
      const auto& c = a.comm[i];
      out << "  " << c.stream_label << ": " << c.name << " (" << c.engine << ") " << c.count
          << (c.count == 1 ? " operation, " : " operations, ") << c.bytes << " bytes, "
          << us(c.total_us) << "\n";
    }
    for (const auto& r : a.comm_overlap) {
      char pct[16];
      std::snprintf(pct, sizeof pct, "%.1f%%",
                    r.comm_us > 0 ? 100.0 * r.covered_us / r.comm_us : 0.0);
      out << "  " << (r.rank >= 0 ? "rank " + std::to_string(r.rank) : std::string("in all"))
          << ": communication in flight " << us(r.comm_us) << ", of which streams were busy "
          << us(r.covered_us) << " (" << pct << ")\n";
    }
  }
  if (!a.ranges.empty()) {
    out << "ranges (trace_range: begin to end marker; per stream and name, in the order of their "
           "first start):\n";
    constexpr std::size_t listed = 40;  // a range name per loop iteration would list thousands
    if (a.ranges.size() > listed)
      out << "  (the first " << listed << " of " << a.ranges.size() << " stream and name pairs)\n";
    for (std::size_t i = 0; i < std::min(listed, a.ranges.size()); ++i) {
      const range_summary& r = a.ranges[i];
      out << "  " << r.stream_label << ": \"" << r.name << "\" ";
      if (r.count == 1)
        out << us(r.total_us) << "\n";
      else
        out << r.count << " ranges, " << us(r.total_us) << " in all (" << us(r.shortest_us)
            << " to " << us(r.longest_us) << " each)\n";
    }
  }
  return out.str();
}

void trace_analyzer::write_timeline_png(const std::string& png, std::size_t every_op_up_to) {
  state& s = *s_;
  const trace_analysis& a = finish();
  const std::vector<traced_range>& ranges = s.drawn_ranges;
  if (a.operations == 0 && ranges.empty())
    throw std::runtime_error("no operations and no trace_ranges: no timeline to draw");
  const std::string data = png + ".dat";
  const std::string script = png + ".gnuplot";
  // Rows from the bottom: each stream, then its trace_ranges, a row per
  // nesting level (at most 4; deeper ones share the fourth); streams with
  // ranges only (no operation of their own) last.
  constexpr std::size_t max_levels = 4;
  std::map<std::uint64_t, std::vector<const traced_range*>> ranges_of;
  for (const traced_range& r : ranges) ranges_of[r.stream].push_back(&r);
  std::map<const traced_range*, std::size_t> level;
  std::map<std::uint64_t, std::size_t> levels;  // per stream with ranges
  for (auto& [stream, list] : ranges_of) {
    // By start, an enclosing range before those it encloses.
    std::stable_sort(list.begin(), list.end(), [](const traced_range* x, const traced_range* y) {
      return x->start_us != y->start_us ? x->start_us < y->start_us : x->end_us > y->end_us;
    });
    std::vector<double> open;  // end times of the enclosing ranges
    for (const traced_range* r : list) {
      while (!open.empty() && open.back() <= r->start_us) open.pop_back();
      level[r] = std::min(open.size(), max_levels - 1);
      levels[stream] = std::max(levels[stream], level[r] + 1);
      open.push_back(r->end_us);
    }
  }
  std::vector<std::string> row_labels;
  std::map<std::uint64_t, std::size_t> row, range_row;  // a stream's row, its first range row
  const auto add_range_rows = [&](std::uint64_t stream, const std::string& label) {
    const auto l = levels.find(stream);
    if (l == levels.end()) return;
    range_row[stream] = row_labels.size();
    for (std::size_t k = 0; k < l->second; ++k)
      row_labels.push_back(label + " ranges" + (k == 0 ? "" : " " + std::to_string(k + 1)));
  };
  for (const stream_summary& st : a.streams) {
    row[st.stream] = row_labels.size();
    row_labels.push_back(label_of(st));
    add_range_rows(st.stream, label_of(st));
  }
  for (const auto& [stream, list] : ranges_of)
    if (row.find(stream) == row.end()) {
      std::string label = stream_label(list.front()->device, stream, "");
      for (const range_summary& r : a.ranges)
        if (r.stream == stream) label = r.stream_label;
      add_range_rows(stream, label);
    }
  std::map<std::string, int> colors;  // kind -> gnuplot line type
  for (const std::string& k : s.kinds) colors.emplace(k, 0);
  int next = 1;
  for (auto& c : colors) c.second = next++;
  std::vector<int> color_of(s.kinds.size());  // kind id -> line type
  for (std::size_t k = 0; k < s.kinds.size(); ++k) color_of[k] = colors[s.kinds[k]];
  double origin = 0, last = 0;
  bool any = false;
  const auto extend = [&](double start, double end) {
    origin = any ? std::min(origin, start) : start;
    last = any ? std::max(last, end) : end;
    any = true;
  };
  if (s.any) extend(s.first, s.last);
  for (const traced_range& r : ranges) extend(r.start_us, r.end_us);
  // Above every_op_up_to operations: time buckets of about a pixel.
  const bool bucketed = a.operations > every_op_up_to;
  constexpr std::size_t buckets = 1400;
  const double width = std::max(last - origin, 1e-9) / static_cast<double>(buckets);
  {
    std::ofstream d(data);
    d << "# row start_us end_us color kind\n";
    std::vector<double> busy;  // per bucket and kind, of one stream
    for (std::size_t i = 0; i < s.streams.size(); ++i) {
      const stream_state& st = *s.streams[i];
      const std::size_t r = row[st.id];
      log_reader<op_record> reader(*s.file, st.ops);
      op_record o;
      if (!bucketed) {
        while (reader.next(o))
          d << r << ' ' << (o.start - origin) << ' ' << (o.end - origin) << ' ' << color_of[o.kind]
            << ' ' << s.kinds[o.kind] << '\n';
        continue;
      }
      const std::size_t nk = s.kinds.size();
      busy.assign(buckets * nk, 0.0);
      while (reader.next(o)) {
        const double from = o.start - origin, to = o.end - origin;
        auto b = static_cast<std::size_t>(std::max(0.0, from / width));
        for (; b < buckets; ++b) {
          const double lo = std::max(from, static_cast<double>(b) * width);
          const double hi = std::min(to, static_cast<double>(b + 1) * width);
          if (hi <= lo) break;
          busy[b * nk + o.kind] += hi - lo;
        }
      }
      for (std::size_t b = 0; b < buckets; ++b) {
        double total = 0, most = 0;
        std::size_t kind = 0;
        for (std::size_t k = 0; k < nk; ++k) {
          total += busy[b * nk + k];
          if (busy[b * nk + k] > most) {
            most = busy[b * nk + k];
            kind = k;
          }
        }
        if (total <= 0) continue;
        const double start = static_cast<double>(b) * width;
        d << r << ' ' << start << ' ' << start + std::min(width, total) << ' ' << color_of[kind]
          << ' ' << s.kinds[kind] << '\n';
      }
    }
    if (!ranges.empty()) {
      d << "\n\n# trace_range (index 1): row start_us end_us name\n";
      for (const traced_range& r : ranges)
        d << range_row[r.stream] + level[&r] << ' ' << (r.start_us - origin) << ' '
          << (r.end_us - origin) << ' ' << gnuplot_text(r.name) << '\n';
    }
    if (!d) throw std::runtime_error("cannot write " + data);
  }
  {
    std::ofstream g(script);
    const std::size_t rows = std::max<std::size_t>(row_labels.size(), 1);
    g << "set terminal pngcairo noenhanced size 1400," << 120 + 28 * rows << "\n"
      << "set output '" << gnuplot_text(png) << "'\n"
      << "set title 'sluice trace: " << a.operations << " operations on " << a.streams.size()
      << " streams";
    if (bucketed)
      g << " (each row in " << buckets << " time buckets: busy time, the kind busy longest)";
    if (s.range_count > ranges.size())
      g << " (the first " << ranges.size() << " of " << s.range_count << " trace_ranges)";
    g << "'\n"
      << "set xlabel 'time (us)'\nset yrange [-0.7:" << static_cast<double>(rows) - 0.3
      << "]\nset grid x\n"
      << "set key outside right top\nset style fill solid 0.9 noborder\nset ytics (";
    std::size_t widest = 0;
    for (std::size_t i = 0; i < row_labels.size(); ++i) {
      g << (i ? ", " : "") << "'" << gnuplot_text(row_labels[i]) << "' " << i;
      widest = std::max(widest, row_labels[i].size());
    }
    g << ")\n";
    // A range's name at its start, where the bar is wide enough for it: the
    // plot is about 1400 px less the key and the row labels wide, at most 7 px
    // a character of the labels' font.
    const double plot_px = std::max(200.0, 1400.0 - 200.0 - 7.0 * static_cast<double>(widest));
    const double span = std::max(last - origin, 1e-9);
    for (const traced_range& r : ranges) {
      const double px = (r.end_us - r.start_us) / span * plot_px;
      if (r.name.empty() || px < 7.0 * static_cast<double>(r.name.size()) + 8.0) continue;
      g << "set label '" << gnuplot_text(r.name) << "' at " << (r.start_us - origin) << ", "
        << range_row[r.stream] + level[&r] << " left offset character 0.5, 0 front font ',9'\n";
    }
    g << "plot '" << gnuplot_text(data)
      << "' index 0 using (($2+$3)/2):1:2:3:($1-0.35):($1+0.35):4 with boxxyerror lc variable "
         "notitle";
    if (!ranges.empty())
      g << ", '' index 1 using (($2+$3)/2):1:2:3:($1-0.3):($1+0.3) with boxxyerror "
           "fs solid 0.9 border lc rgb 'white' lc rgb '#b8c8e0' title '"
        << (s.comm.empty() ? "trace_range" : "trace_range, comm op") << "'";
    for (const auto& c : colors)
      g << ", NaN with boxes lc " << c.second << " title '" << gnuplot_text(c.first) << "'";
    g << "\n";
    if (!g) throw std::runtime_error("cannot write " + script);
  }
  std::string gnuplot = "gnuplot";
  char* args[] = {gnuplot.data(), const_cast<char*>(script.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, "gnuplot", nullptr, nullptr, args, environ) != 0)
    throw std::runtime_error(
        "gnuplot not found (Debian: gnuplot-nox, which scripts/setup installs)");
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error("gnuplot failed on " + script);
}

}  // namespace sluice::tool
