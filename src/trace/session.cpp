// trace_begin, trace_end and trace_range (include/sluice/trace.hpp): one
// trace from its start to its file, and its end at exit when it is still
// collected.
#include "checks.hpp"
#include "chrome_json.hpp"
#include "collection.hpp"
#include "spans.hpp"
#include "stream_names.hpp"

#include <sluice/backend.hpp>
#include <sluice/trace.hpp>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace sluice::detail::trace {
namespace {

void write_at_exit() noexcept {
  if (!enabled()) return;
  std::string path;
  bool from_environment = false;
  {
    auto& c = the_collection();
    std::lock_guard<std::mutex> lock(c.m);
    path = c.path;
    from_environment = c.from_environment;
  }
  std::string written;
  {
    auto& c = the_collection();
    std::lock_guard<std::mutex> lock(c.m);
    if (c.w != nullptr) written = c.w->final_path();
  }
  try {
    const std::size_t n = trace_end();
    if (from_environment)
      std::fprintf(stderr, "sluice: trace of %zu operations written to %s (SLUICE_TRACE)\n", n,
                   written.c_str());
    else
      std::fprintf(stderr,
                   "sluice: trace of %zu operations written to %s at exit (trace_end was not "
                   "called)\n",
                   n, path.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice: the trace could not be written: %s\n", e.what());
  }
}

}  // namespace
}  // namespace sluice::detail::trace

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
    if (detail::trace::enabled() || c.w != nullptr)
      detail::fail(errc::invalid_argument, api, "a trace to ", c.path,
                   " is already being collected");
    c.path = path;
  }
  detail::trace::drain_buffers(nullptr);  // records of an earlier trace
  {
    auto& t = detail::trace::the_spans();
    std::lock_guard<std::mutex> lock(t.m);
    t.spans.clear();
  }
  // The file is opened now and written while the program runs; one that
  // cannot be opened is reported by trace_end (errc::backend_failure).
  auto w = std::make_shared<detail::trace::writer>(path, detail::trace::now_ns());
  {
    std::lock_guard<std::mutex> lock(c.m);
    c.clock_error_ns.clear();
    c.source.clear();
    c.from_environment = false;
    c.w = std::move(w);
    if (!c.at_exit) {  // a trace still collected at exit is ended there: the file stays valid
      c.at_exit = true;
      std::atexit(detail::trace::write_at_exit);
    }
  }
  bool started_library = false;
  try {
    started_library = detail::trace_backend_begin();
  } catch (...) {
    std::lock_guard<std::mutex> lock(c.m);
    c.w.reset();
    throw;
  }
  // Exit handlers run in reverse order: this one must run while the library
  // is still up (a trace ended at exit flushes CUPTI, and a flush after
  // CUPTI's own exit handler crashes the process on a GPU).
  if (started_library) std::atexit(detail::trace::write_at_exit);
  detail::stream_names::trace_begun();  // streams destroyed from now on keep their names
  detail::trace::on.store(true, std::memory_order_relaxed);
}

std::size_t trace_end() {
  constexpr const char* api = "sluice::trace_end";
  std::string path;
  std::shared_ptr<detail::trace::writer> w;
  auto& c = detail::trace::the_collection();
  {
    std::lock_guard<std::mutex> lock(c.m);
    if (!detail::trace::enabled())
      detail::fail(errc::invalid_argument, api, "no trace is being collected");
    detail::trace::on.store(false, std::memory_order_relaxed);
    path = c.path;
    w = c.w;
  }
  std::size_t operations = 0;
  bool written = false;
  try {
    detail::trace_backend_collect();
    detail::trace::drain_buffers(w);
    std::map<int, std::int64_t> clock_error_ns;
    std::string source;
    detail::trace::rank_info rank;
    bool has_rank = false;
    {
      std::lock_guard<std::mutex> lock(c.m);
      clock_error_ns.swap(c.clock_error_ns);
      source.swap(c.source);
      rank = c.rank;
      has_rank = c.has_rank;
    }
    // The trace's own metadata: the host (same host: same steady clock), and
    // where there is one, the rank and its clock against the reference rank's.
    std::string trace_args = "\"host\": \"";
    detail::trace::append_escaped(trace_args, detail::trace::host_identity());
    trace_args += "\", \"process\": " + std::to_string(getpid());
    if (has_rank && rank.rank >= 0) {
      trace_args += ", \"rank\": " + std::to_string(rank.rank);
      if (rank.ranks > 0) trace_args += ", \"ranks\": " + std::to_string(rank.ranks);
      if (rank.reference >= 0) {
        trace_args += ", \"clock_reference_rank\": " + std::to_string(rank.reference);
        trace_args += std::string(", \"clock_same_host\": ") + (rank.same_host ? "true" : "false");
        trace_args += ", \"clock_offset_ns\": " + std::to_string(rank.clock_offset_ns);
        trace_args += ", \"clock_offset_error_ns\": " + std::to_string(rank.clock_error_ns);
        trace_args += ", \"clock_offset_measured_ns\": " + std::to_string(rank.measured_offset_ns);
        trace_args +=
            ", \"clock_offset_measured_error_ns\": " + std::to_string(rank.measured_error_ns);
      }
    }
    for (const auto& e : clock_error_ns)
      if (e.second > 100000)  // a few us on an idle machine
        std::fprintf(stderr,
                     "sluice: trace: device %d's times are placed on the host clock within +-%.0f "
                     "us only (the host was busy while the trace calibrated): device and host "
                     "tracks may be off by that much against each other\n",
                     e.first, static_cast<double>(e.second) / 1000.0);
    path = w->final_path();
    written = w->finish(clock_error_ns, source, trace_args, &operations);
  } catch (...) {
    detail::stream_names::trace_written();
    std::lock_guard<std::mutex> lock(c.m);
    c.w.reset();
    throw;
  }
  detail::stream_names::trace_written();  // names of streams destroyed in the trace go
  {
    std::lock_guard<std::mutex> lock(c.m);
    c.w.reset();
  }
  if (!written) detail::fail(errc::backend_failure, api, "cannot write ", path);
  return operations;
}

bool tracing() noexcept { return detail::trace::enabled(); }

trace_range::trace_range(stream_ref s, std::string name) : stream_(s), name_(std::move(name)) {
  if (!tracing()) return;
  id_ = detail::trace::new_range_id();
  detail::enqueue_trace_marker(stream_, name_, true, id_);
  active_ = true;
}

trace_range::~trace_range() {
  if (!active_ || !tracing()) return;
  try {
    detail::enqueue_trace_marker(stream_, name_, false, id_);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice: trace_range \"%s\": the end marker failed: %s\n", name_.c_str(),
                 e.what());
  }
}

}  // namespace sluice
