#include "trace.hpp"

#include "checks.hpp"
#include "stream_names.hpp"

#include <sluice/backend.hpp>
#include <sluice/trace.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string_view>
#include <utility>
#include <vector>

namespace sluice::detail {
namespace trace {

std::atomic<bool> on{false};

namespace {

struct buffer {
  std::mutex m;
  std::vector<record> records;
};

struct collection {
  std::mutex m;  // buffers, path, at_exit
  std::vector<std::shared_ptr<buffer>> buffers;
  std::string path;
  bool at_exit = false;
  std::map<int, std::int64_t> clock_error_ns;  // per device, from the backend's calibration
};

collection& the_collection() {
  static auto* c = new collection();  // never destroyed: worker threads may submit at exit
  return *c;
}

thread_local std::shared_ptr<buffer> this_thread_buffer;

std::vector<record> take_all() {
  auto& c = the_collection();
  std::vector<record> all;
  std::lock_guard<std::mutex> lock(c.m);
  for (auto& b : c.buffers) {
    std::lock_guard<std::mutex> inner(b->m);
    for (auto& r : b->records) all.push_back(std::move(r));
    b->records.clear();
  }
  return all;
}

void append_escaped(std::string& out, const std::string& text) {
  for (const char ch : text) {
    switch (ch) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20) {
          char code[8];
          std::snprintf(code, sizeof code, "\\u%04x", static_cast<unsigned>(ch));
          out += code;
        } else {
          out += ch;
        }
    }
  }
}

std::string microseconds(std::int64_t ns, std::int64_t origin) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3f", static_cast<double>(ns - origin) / 1000.0);
  return text;
}

constexpr int host_pid = 1000000;  // the track group of the enqueueing host threads

bool is_marker(const record& r) {
  return std::string_view(r.kind) == "range_begin" || std::string_view(r.kind) == "range_end";
}

void write_at_exit() noexcept {
  if (!enabled()) return;
  try {
    const std::size_t n = trace_end();
    std::fprintf(stderr, "sluice: trace of %zu operations written (SLUICE_TRACE)\n", n);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice: the trace could not be written: %s\n", e.what());
  }
}

}  // namespace

std::int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::uint64_t thread_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  thread_local const std::uint64_t id = next.fetch_add(1, std::memory_order_relaxed);
  return id;
}

std::uint64_t new_stream_id() noexcept {
  static std::atomic<std::uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

void submit(record&& r) noexcept {
  try {
    if (!this_thread_buffer) {
      auto b = std::make_shared<buffer>();
      auto& c = the_collection();
      std::lock_guard<std::mutex> lock(c.m);
      c.buffers.push_back(b);
      this_thread_buffer = std::move(b);
    }
    std::lock_guard<std::mutex> lock(this_thread_buffer->m);
    this_thread_buffer->records.push_back(std::move(r));
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: an operation is left out\n");
  }
}

void note_clock_error(int device, std::int64_t ns) noexcept {
  auto& c = the_collection();
  try {
    std::lock_guard<std::mutex> lock(c.m);
    std::int64_t& kept = c.clock_error_ns[device];
    kept = std::max(kept, ns);  // a device calibrated twice in one trace: the wider
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: a clock error is left out\n");
  }
}

void start_from_environment() {
  const char* path = std::getenv("SLUICE_TRACE");
  if (path == nullptr || *path == '\0' || enabled()) return;
#ifdef SLUICE_NO_TRACING
  std::fprintf(stderr,
               "sluice: SLUICE_TRACE=%s is ignored: this sluice was built with "
               "-DSLUICE_TRACING=OFF\n",
               path);
  return;
#endif
  trace_begin(path);
  auto& c = the_collection();
  std::lock_guard<std::mutex> lock(c.m);
  if (!c.at_exit) {
    c.at_exit = true;
    std::atexit(write_at_exit);
  }
}

std::string to_chrome_json(std::size_t* operations) {
  std::vector<record> all = take_all();
  std::map<int, std::int64_t> clock_error_ns;
  {
    auto& c = the_collection();
    std::lock_guard<std::mutex> lock(c.m);
    clock_error_ns.swap(c.clock_error_ns);
  }
  for (const auto& e : clock_error_ns)
    if (e.second > 100000)  // a few us on an idle machine
      std::fprintf(stderr,
                   "sluice: trace: device %d's times are placed on the host clock within +-%.0f "
                   "us only (the host was busy while the trace calibrated): device and host "
                   "tracks may be off by that much against each other\n",
                   e.first, static_cast<double>(e.second) / 1000.0);
  std::sort(all.begin(), all.end(), [](const record& a, const record& b) {
    return a.stream != b.stream ? a.stream < b.stream : a.seq < b.seq;
  });
  std::int64_t origin = INT64_MAX;
  for (const record& r : all) origin = std::min({origin, r.enqueue_ns, r.start_ns});
  if (all.empty()) origin = 0;

  std::string out = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  bool first = true;
  const auto event = [&](const std::string& body) {
    if (!first) out += ",\n";
    first = false;
    out += "{" + body + "}";
  };
  // Track names: one process per device, one thread per stream; host threads apart.
  std::map<std::uint64_t, const record*> streams;
  std::map<int, bool> devices;
  std::map<std::uint64_t, bool> host_threads;
  std::map<std::pair<std::uint64_t, std::uint64_t>, const record*> by_position;
  for (const record& r : all) {
    streams.emplace(r.stream, &r);
    devices[r.device] = true;
    host_threads[r.host_thread] = true;
    by_position[{r.stream, r.seq}] = &r;
  }
  for (const auto& d : devices) {
    // Where device times were mapped onto the host clock: how far they may be off.
    std::string error;
    const auto e = clock_error_ns.find(d.first);
    if (e != clock_error_ns.end()) error = ", \"clock_error_us\": " + microseconds(e->second, 0);
    event("\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + std::to_string(d.first) +
          ", \"args\": {\"name\": \"device " + std::to_string(d.first) + " (" + backend_name() +
          ")\"" + error + "}");
  }
  event("\"ph\": \"M\", \"name\": \"process_name\", \"pid\": " + std::to_string(host_pid) +
        ", \"args\": {\"name\": \"host threads (enqueue)\"}");
  // A stream's track: "d<device>/s<id>", its name when it has one (the id
  // keeps two streams of one name apart), its native priority; the name and
  // the priority also as arguments of their own (`sluice trace report`).
  for (const auto& s : streams) {
    const std::string name = stream_names::traced(s.first);
    std::string escaped;
    append_escaped(escaped, name);
    const std::string priority = std::to_string(s.second->priority);
    std::string args = "\"name\": \"d" + std::to_string(s.second->device) + "/s" +
                       std::to_string(s.first) + (name.empty() ? "" : " " + escaped) +
                       " (native priority " + priority + ")\"";
    if (!name.empty()) args += ", \"stream_name\": \"" + escaped + "\"";
    args += ", \"native_priority\": " + priority;
    event("\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + std::to_string(s.second->device) +
          ", \"tid\": " + std::to_string(s.first) + ", \"args\": {" + args + "}");
  }
  for (const auto& h : host_threads)
    event("\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": " + std::to_string(host_pid) +
          ", \"tid\": " + std::to_string(h.first) + ", \"args\": {\"name\": \"host thread " +
          std::to_string(h.first) + "\"}");

  std::size_t count = 0;
  std::uint64_t flow = 0;
  std::map<std::uint64_t, std::vector<const record*>> open_ranges;  // per stream
  for (const record& r : all) {
    const std::string where =
        "\"pid\": " + std::to_string(r.device) + ", \"tid\": " + std::to_string(r.stream);
    if (!is_marker(r)) ++count;  // trace_range markers are not operations of their own
    // Where it was enqueued: an instant on the host thread's track.
    event("\"name\": \"" + std::string(r.kind) + "\", \"cat\": \"enqueue\", \"ph\": \"i\", " +
          "\"s\": \"t\", \"pid\": " + std::to_string(host_pid) + ", \"tid\": " +
          std::to_string(r.host_thread) + ", \"ts\": " + microseconds(r.enqueue_ns, origin) +
          ", \"args\": {\"stream\": " + std::to_string(r.stream) +
          ", \"device\": " + std::to_string(r.device) + "}");
    if (is_marker(r)) {
      if (std::string_view(r.kind) == "range_begin") {
        open_ranges[r.stream].push_back(&r);
      } else if (!open_ranges[r.stream].empty()) {
        const record* b = open_ranges[r.stream].back();
        open_ranges[r.stream].pop_back();
        std::string name;
        append_escaped(name, b->label);
        event("\"name\": \"" + name + "\", \"cat\": \"range\", \"ph\": \"X\", " + where +
              ", \"ts\": " + microseconds(b->end_ns, origin) +
              ", \"dur\": " + microseconds(r.end_ns, b->end_ns));
      }
      continue;
    }
    std::string args = "\"seq\": " + std::to_string(r.seq) +
                       ", \"enqueued_us\": " + microseconds(r.enqueue_ns, origin) +
                       ", \"host_thread\": " + std::to_string(r.host_thread);
    if (r.bytes != 0) args += ", \"bytes\": " + std::to_string(r.bytes);
    if (r.path != nullptr) args += ", \"path\": \"" + std::string(r.path) + "\"";
    if (r.from_stream != 0)
      args += ", \"waits_for_stream\": " + std::to_string(r.from_stream) +
              ", \"waits_for_seq\": " + std::to_string(r.from_seq);
    // A labelled operation (a Kokkos kernel) shows its label; its kind goes to the args.
    std::string op_name = r.kind;
    if (!r.label.empty()) {
      op_name.clear();
      append_escaped(op_name, r.label);
      args += ", \"kind\": \"" + std::string(r.kind) + "\"";
    }
    event("\"name\": \"" + op_name + "\", \"cat\": \"op\", \"ph\": \"X\", " + where +
          ", \"ts\": " + microseconds(r.start_ns, origin) +
          ", \"dur\": " + microseconds(r.end_ns, r.start_ns) + ", \"args\": {" + args + "}");
    if (r.from_stream != 0) {
      const auto source = by_position.find({r.from_stream, r.from_seq});
      if (source != by_position.end()) {
        const record& s = *source->second;
        ++flow;
        event("\"name\": \"wait\", \"cat\": \"wait\", \"ph\": \"s\", \"id\": " +
              std::to_string(flow) + ", \"pid\": " + std::to_string(s.device) + ", \"tid\": " +
              std::to_string(s.stream) + ", \"ts\": " + microseconds(s.end_ns, origin));
        event("\"name\": \"wait\", \"cat\": \"wait\", \"ph\": \"f\", \"bp\": \"e\", \"id\": " +
              std::to_string(flow) + ", " + where +
              ", \"ts\": " + microseconds(r.start_ns, origin));
      }
    }
  }
  out += "\n]}\n";
  if (operations != nullptr) *operations = count;
  return out;
}

}  // namespace trace
}  // namespace sluice::detail

namespace sluice {

void trace_begin(const std::string& path) {
  constexpr const char* api = "sluice::trace_begin";
  if (path.empty()) detail::fail(errc::invalid_argument, api, "the path is empty");
#ifdef SLUICE_NO_TRACING
  detail::fail(errc::not_supported, api, "this sluice was built with -DSLUICE_TRACING=OFF");
#endif
  if (!detail::trace_supported())
    detail::fail(errc::not_supported, api, "tracing is not implemented on the ", backend_name(),
                 " backend yet");
  auto& c = detail::trace::the_collection();
  {
    std::lock_guard<std::mutex> lock(c.m);
    if (detail::trace::enabled())
      detail::fail(errc::invalid_argument, api, "a trace to ", c.path,
                   " is already being collected");
    c.path = path;
  }
  (void)detail::trace::take_all();  // records of an earlier trace
  {
    std::lock_guard<std::mutex> lock(c.m);
    c.clock_error_ns.clear();
  }
  detail::stream_names::trace_begun();  // streams destroyed from now on keep their names
  detail::trace::on.store(true, std::memory_order_relaxed);
}

std::size_t trace_end() {
  constexpr const char* api = "sluice::trace_end";
  std::string path;
  {
    auto& c = detail::trace::the_collection();
    std::lock_guard<std::mutex> lock(c.m);
    if (!detail::trace::enabled())
      detail::fail(errc::invalid_argument, api, "no trace is being collected");
    detail::trace::on.store(false, std::memory_order_relaxed);
    path = c.path;
  }
  detail::trace_backend_collect();
  std::size_t operations = 0;
  std::string json;
  try {
    json = detail::trace::to_chrome_json(&operations);
  } catch (...) {
    detail::stream_names::trace_written();
    throw;
  }
  detail::stream_names::trace_written();  // names of streams destroyed in the trace go
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) detail::fail(errc::backend_failure, api, "cannot write ", path);
  const bool written = std::fwrite(json.data(), 1, json.size(), f) == json.size();
  const bool closed = std::fclose(f) == 0;
  if (!written || !closed) detail::fail(errc::backend_failure, api, "cannot write ", path);
  return operations;
}

bool tracing() noexcept { return detail::trace::enabled(); }

trace_range::trace_range(stream_ref s, std::string name) : stream_(s), name_(std::move(name)) {
  if (!tracing()) return;
  detail::enqueue_trace_marker(stream_, name_, true);
  active_ = true;
}

trace_range::~trace_range() {
  if (!active_ || !tracing()) return;
  try {
    detail::enqueue_trace_marker(stream_, name_, false);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice: trace_range \"%s\": the end marker failed: %s\n", name_.c_str(),
                 e.what());
  }
}

}  // namespace sluice
