// `sluice trace report`'s reader: the framing scanner hands it each event,
// parsed; it checks what the event says and hands the trace's operations,
// ranges, tracks and metadata to a trace_sink.
#include "trace/reader.hpp"

#include "trace/framing_scanner.hpp"

#include <fcntl.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string_view>

namespace sluice::tool {
namespace {

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

//! What an event of the trace says, checked, for the sink.
class event_decoder : public framing_scanner::handler {
 public:
  explicit event_decoder(trace_sink& sink) : sink_(sink) {}

  void event(simdjson::dom::element e, std::uint64_t index, std::uint64_t byte) override {
    events_ = index;
    decode(e, byte);
  }

 private:
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

  void decode(simdjson::dom::element e, std::uint64_t byte) {
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
    if (!is(ph, "X") ||
        (!is(cat, "op") && !is(cat, "range") && !is(cat, "comm") && !is(cat, "graph")))
      return;
    const char* what = is(cat, "op")      ? "an operation (\"cat\": \"op\")"
                       : is(cat, "comm")  ? "a communication span (\"cat\": \"comm\")"
                       : is(cat, "graph") ? "a graph launch's operation (\"cat\": \"graph\")"
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
    if (is(cat, "graph")) {
      traced_graph_op g;
      g.device = static_cast<int>(pid);
      g.stream = tid;
      g.start_us = ts;
      g.end_us = ts + dur;
      if (has_args)
        for (const auto field : args) {
          const std::string_view k = field.key;
          if (is(k, "kind"))
            g.kind = std::string(text(field.value, "args.kind", byte));
          else if (is(k, "launch"))
            g.launch = whole(field.value, "args.launch", byte);
          else if (is(k, "vertex"))
            g.vertex = whole(field.value, "args.vertex", byte);
        }
      if (g.kind.empty()) g.kind = has_name ? std::string(name) : std::string("op");
      sink_.graph_op(g);
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
  std::uint64_t events_ = 0;  // the number of the event being decoded
  traced_op op_;
};

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

}  // namespace

void read_trace_events(const trace_source& source, trace_sink& sink) {
  event_decoder decoder(sink);
  framing_scanner reader(decoder);
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

void read_trace_string(const std::string& json, trace_sink& sink, std::size_t piece) {
  std::size_t at = 0;
  read_trace_events(
      [&](char* into, std::size_t size) {
        const std::size_t n = std::min({size, json.size() - at, piece});
        std::copy_n(json.data() + at, n, into);
        at += n;
        return n;
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
  read_trace_string(json, c);
  return std::move(c.ops);
}

}  // namespace sluice::tool
