#include "trace.hpp"

#include "checks.hpp"
#include "stream_names.hpp"

#include <sluice/backend.hpp>
#include <sluice/trace.hpp>

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

namespace sluice::detail {
namespace trace {

std::atomic<bool> on{false};

namespace {

// The bound on a trace's memory: each thread that submits holds one chunk of
// up to chunk_records records; the writer holds at most max_queued chunks
// waiting to be written (a submitter waits while it is that far behind) and
// keeps as many emptied ones for reuse. About 1024 * 136 bytes a chunk.
constexpr std::size_t chunk_records = 1024;
constexpr std::size_t max_queued = 32;
constexpr std::size_t wake_batch = 8;
// Flow arrows need the position (device, end time) of the work a wait waited
// for, which may be written before or after the wait: the writer remembers
// recent records' positions in a table of `recent_positions` slots (a record
// takes the slot its stream and seq hash to, so it stays until a later one
// takes that slot), and up to `max_pending_waits` waits whose source it has
// not seen yet. A wait for work no longer remembered keeps its
// waits_for_stream/waits_for_seq arguments but draws no arrow.
constexpr std::size_t recent_positions = 1 << 16;
constexpr std::size_t max_pending_waits = 1 << 16;
constexpr std::size_t flush_bytes = 1 << 20;
constexpr int host_pid = 1000000;  // the track group of the enqueueing host threads

// --- formatting (hand-written: see docs/design.md, "Libraries") ----------

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

template <class T>
void append_int(std::string& out, T v) {
  char text[24];
  const auto r = std::to_chars(text, text + sizeof text, v);
  out.append(text, r.ptr);
}

//! (ns - origin) / 1000 with three decimals: what "%.3f" printed, exactly
//! (an integer count of ns is an exact decimal in us).
void append_us(std::string& out, std::int64_t ns, std::int64_t origin) {
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

bool is_marker(const record& r) {
  return std::string_view(r.kind) == "range_begin" || std::string_view(r.kind) == "range_end";
}

//! "pid": <device>, "tid": <stream>
void append_where(std::string& out, int device, std::uint64_t stream) {
  out += "\"pid\": ";
  append_int(out, device);
  out += ", \"tid\": ";
  append_int(out, stream);
}

void append_enqueue_event(std::string& out, const record& r, std::int64_t origin) {
  out += "{\"name\": \"";
  out += r.kind;
  out += "\", \"cat\": \"enqueue\", \"ph\": \"i\", \"s\": \"t\", \"pid\": ";
  append_int(out, host_pid);
  out += ", \"tid\": ";
  append_int(out, r.host_thread);
  out += ", \"ts\": ";
  append_us(out, r.enqueue_ns, origin);
  out += ", \"args\": {\"stream\": ";
  append_int(out, r.stream);
  out += ", \"device\": ";
  append_int(out, r.device);
  out += "}}";
}

void append_op_event(std::string& out, const record& r, std::int64_t origin) {
  out += "{\"name\": \"";
  // A labelled operation (a Kokkos kernel, sluice::kokkos) shows its label;
  // its kind goes to the args.
  if (r.label.empty())
    out += r.kind;
  else
    append_escaped(out, r.label);
  out += "\", \"cat\": \"op\", \"ph\": \"X\", ";
  append_where(out, r.device, r.stream);
  out += ", \"ts\": ";
  append_us(out, r.start_ns, origin);
  out += ", \"dur\": ";
  append_us(out, r.end_ns, r.start_ns);
  out += ", \"args\": {\"seq\": ";
  append_int(out, r.seq);
  if (r.host_thread == 0) {
    // Work the user enqueued on the stream directly (a trace source that
    // sees it: CUPTI): no sluice call, no host track.
    out += ", \"through_sluice\": false";
  } else {
    out += ", \"enqueued_us\": ";
    append_us(out, r.enqueue_ns, origin);
    out += ", \"host_thread\": ";
    append_int(out, r.host_thread);
  }
  if (r.bytes != 0) {
    out += ", \"bytes\": ";
    append_int(out, r.bytes);
  }
  if (r.path != nullptr) {
    out += ", \"path\": \"";
    out += r.path;
    out += '"';
  }
  if (r.from_stream != 0) {
    out += ", \"waits_for_stream\": ";
    append_int(out, r.from_stream);
    out += ", \"waits_for_seq\": ";
    append_int(out, r.from_seq);
  }
  if (!r.label.empty()) {
    out += ", \"kind\": \"";
    out += r.kind;
    out += '"';
  }
  out += "}}";
}

struct position {
  int device = 0;
  std::uint64_t stream = 0;
  std::int64_t ns = 0;  // the source's end, or the wait's start
};

struct position_key {
  std::uint64_t stream = 0, seq = 0;
  bool operator==(const position_key& o) const { return stream == o.stream && seq == o.seq; }
};

struct position_hash {
  std::size_t operator()(const position_key& k) const noexcept {
    return static_cast<std::size_t>(
        (k.stream * 0x9E3779B97F4A7C15ULL ^ k.seq) * 0xBF58476D1CE4E5B9ULL >> 16);
  }
};

struct recent_slot {
  position_key key;  // stream 0: empty
  position where;
};

struct open_range {
  int device = 0;
  std::uint64_t stream = 0;
  std::int64_t ns = 0;
  std::string label;
};

struct stream_track {
  int device = 0;
  int priority = 0;
};

//! note_span's category and arguments, by range id, until the writer draws
//! the span (on its thread): sluice::comm's operations, few next to the
//! operations around them.
struct span_table {
  std::mutex m;
  std::unordered_map<std::uint64_t, std::pair<const char*, std::string>> spans;
};

span_table& the_spans() {
  static auto* t = new span_table();  // never destroyed: used at exit
  return *t;
}

//! One trace being written: the file, a thread that formats and writes the
//! chunks handed to it, and what the end needs (tracks, counts).
class writer {
 public:
  writer(const std::string& path, std::int64_t origin) : origin_(origin) {
    path_ = path;
    out_.reserve(flush_bytes + 4096);
    out_ = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
    thread_ = std::thread([this] { run(); });
    // trace_begin returns once the writer thread is asleep, waiting for work:
    // its start-up is not charged to the first traced operations.
    std::unique_lock<std::mutex> lock(m_);
    started_cv_.wait(lock, [&] { return started_; });
  }
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;
  ~writer() {
    stop();
    if (file_ != nullptr) std::fclose(file_);
  }

  //! Queues a full chunk (waits while max_queued are queued); returns an
  //! emptied chunk to fill next, when one is spare. After stop(): dropped.
  std::vector<record> push(std::vector<record>&& chunk) {
    std::unique_lock<std::mutex> lock(m_);
    space_.wait(lock, [&] { return queue_.size() < max_queued || stopping_; });
    std::vector<record> spare;
    if (stopping_) return spare;
    queue_.push_back(std::move(chunk));
    // The writer, once woken, empties the queue; it is woken for a batch of
    // chunks, not for each: fewer wake-ups and context switches taken from
    // the traced program's threads.
    if (queue_.size() >= wake_batch) work_.notify_one();
    if (!spares_.empty()) {
      spare = std::move(spares_.back());
      spares_.pop_back();
    }
    return spare;
  }

  //! Once written, the file is renamed to `path` (any thread).
  void rename_at_end(const std::string& path) {
    std::lock_guard<std::mutex> lock(path_m_);
    final_path_ = path;
  }
  //! The file's name once written.
  std::string final_path() {
    std::lock_guard<std::mutex> lock(path_m_);
    return final_path_.empty() ? path_ : final_path_;
  }

  //! Writes what is queued, then the tracks' metadata and the end of the
  //! document, and closes the file. False if the file could not be written.
  //! `trace_args`: JSON members of the trace's own metadata event ("sluice_trace").
  bool finish(const std::map<int, std::int64_t>& clock_error_ns, const std::string& source,
              const std::string& trace_args, std::size_t* operations) {
    stop();
    if (failed_) return false;
    for (const int d : devices_) {
      // Where device times were mapped onto the host clock: how far they may be off.
      std::string args = "\"name\": \"device " + std::to_string(d) + " (" + backend_name() + ")\"";
      const auto e = clock_error_ns.find(d);
      if (e != clock_error_ns.end()) {
        args += ", \"clock_error_us\": ";
        append_us(args, e->second, 0);
      }
      metadata("process_name", d, nullptr, args);
    }
    metadata("process_name", host_pid, nullptr,
             "\"name\": \"host threads (enqueue)\"" + (source.empty() ? "" : ", " + source));
    // A stream's track: "d<device>/s<id>", its name when it has one (the id
    // keeps two streams of one name apart), its native priority; the name and
    // the priority also as arguments of their own (`sluice trace report`).
    for (const auto& s : streams_) {
      std::string escaped;
      append_escaped(escaped, stream_names::traced(s.first));
      const std::string priority = std::to_string(s.second.priority);
      std::string args = "\"name\": \"d" + std::to_string(s.second.device) + "/s" +
                         std::to_string(s.first) + (escaped.empty() ? "" : " " + escaped) +
                         " (native priority " + priority + ")\"";
      if (!escaped.empty()) args += ", \"stream_name\": \"" + escaped + "\"";
      args += ", \"native_priority\": " + priority;
      const std::uint64_t tid = s.first;
      metadata("thread_name", s.second.device, &tid, args);
    }
    for (const std::uint64_t h : host_threads_)
      metadata("thread_name", host_pid, &h, "\"name\": \"host thread " + std::to_string(h) + "\"");
    // The trace's own: where its clock's origin is on the host's steady clock,
    // the host, and (several ranks) the rank and its clock offset.
    {
      std::string args = "\"origin_steady_ns\": ";
      append_int(args, origin_);
      args += ", " + trace_args;
      metadata("sluice_trace", host_pid, nullptr, args);
    }
    out_ += "\n]}\n";
    flush();
    if (file_ == nullptr) return false;  // it could not be opened
    bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    {
      std::lock_guard<std::mutex> lock(path_m_);
      if (closed && !failed_ && !final_path_.empty() && final_path_ != path_)
        closed = std::rename(path_.c_str(), final_path_.c_str()) == 0;
    }
    if (operations != nullptr) *operations = operations_;
    return !failed_ && closed;
  }

 private:
  void stop() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stopping_ = true;
    }
    work_.notify_all();
    space_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  void run() {
#ifdef __linux__
    pthread_setname_np(pthread_self(), "sluice-trace");
#endif
    for (;;) {
      std::vector<record> chunk;
      {
        std::unique_lock<std::mutex> lock(m_);
        if (queue_.empty()) {  // asleep until a batch of chunks is queued, or the end
          if (stopping_) break;
          work_.wait(lock, [&] {
            if (!started_) {  // the first time, just before it sleeps: trace_begin may return
              started_ = true;
              started_cv_.notify_all();
            }
            return queue_.size() >= wake_batch || stopping_;
          });
          if (queue_.empty()) break;  // stopping, and everything queued is written
        }
        chunk = std::move(queue_.front());
        queue_.pop_front();
      }
      space_.notify_one();
      if (!failed_) {
        try {
          for (const record& r : chunk) write(r);
        } catch (...) {  // out of memory: the file would miss records
          std::fprintf(stderr, "sluice: out of memory while writing the trace\n");
          failed_ = true;
        }
      }
      chunk.clear();
      std::lock_guard<std::mutex> lock(m_);
      if (spares_.size() < max_queued) spares_.push_back(std::move(chunk));
    }
    flush();
  }

  void next_event() {
    if (!first_) out_ += ",\n";
    first_ = false;
  }

  void metadata(const char* name, int pid, const std::uint64_t* tid, const std::string& args) {
    next_event();
    out_ += "{\"ph\": \"M\", \"name\": \"";
    out_ += name;
    out_ += "\", \"pid\": ";
    append_int(out_, pid);
    if (tid != nullptr) {
      out_ += ", \"tid\": ";
      append_int(out_, *tid);
    }
    out_ += ", \"args\": {" + args + "}}";
  }

  void flow(const position& from, const position& to) {
    ++flows_;
    next_event();
    out_ += "{\"name\": \"wait\", \"cat\": \"wait\", \"ph\": \"s\", \"id\": ";
    append_int(out_, flows_);
    out_ += ", ";
    append_where(out_, from.device, from.stream);
    out_ += ", \"ts\": ";
    append_us(out_, from.ns, origin_);
    out_ += "}";
    next_event();
    out_ += "{\"name\": \"wait\", \"cat\": \"wait\", \"ph\": \"f\", \"bp\": \"e\", \"id\": ";
    append_int(out_, flows_);
    out_ += ", ";
    append_where(out_, to.device, to.stream);
    out_ += ", \"ts\": ";
    append_us(out_, to.ns, origin_);
    out_ += "}";
  }

  void write(const record& r) {
    // A record of an earlier trace, completed after it ended: not this trace's.
    if (r.enqueue_ns < origin_) return;
    if (r.stream != last_stream_) {
      streams_.emplace(r.stream, stream_track{r.device, r.priority});
      devices_.insert(r.device);
      last_stream_ = r.stream;
    }
    if (r.host_thread != last_host_thread_ && r.host_thread != 0) {
      host_threads_.insert(r.host_thread);
      last_host_thread_ = r.host_thread;
    }
    if (r.host_thread != 0) {  // 0: enqueued by the user directly (append_op_event)
      next_event();
      append_enqueue_event(out_, r, origin_);
    }
    if (is_marker(r)) {
      range(r);
    } else {
      ++operations_;  // trace_range markers are not operations of their own
      next_event();
      append_op_event(out_, r, origin_);
      if (r.from_stream != 0) wait_flow(r);
    }
    remember(r);
    if (out_.size() >= flush_bytes) flush();
  }

  //! A trace_range's markers, paired by the range's id (in either order).
  void range(const record& r) {
    const bool begin = std::string_view(r.kind) == "range_begin";
    if (begin) {
      const auto end = early_ends_.find(r.range);
      if (end == early_ends_.end()) {
        open_ranges_.emplace(r.range, open_range{r.device, r.stream, r.end_ns, r.label});
        return;
      }
      const std::int64_t end_ns = end->second;
      early_ends_.erase(end);
      range_event(open_range{r.device, r.stream, r.end_ns, r.label}, end_ns, r.range);
    } else {
      const auto b = open_ranges_.find(r.range);
      if (b == open_ranges_.end()) {
        early_ends_.emplace(r.range, r.end_ns);
        return;
      }
      range_event(b->second, r.end_ns, r.range);
      open_ranges_.erase(b);
    }
  }

  void range_event(const open_range& b, std::int64_t end_ns, std::uint64_t id) {
    // A span of note_span (sluice::comm): its own category and arguments.
    const char* cat = "range";
    std::string args;
    {
      auto& t = the_spans();
      std::lock_guard<std::mutex> lock(t.m);
      if (!t.spans.empty()) {
        const auto it = t.spans.find(id);
        if (it != t.spans.end()) {
          cat = it->second.first;
          args.swap(it->second.second);
          t.spans.erase(it);
        }
      }
    }
    next_event();
    out_ += "{\"name\": \"";
    append_escaped(out_, b.label);
    out_ += "\", \"cat\": \"";
    out_ += cat;
    out_ += "\", \"ph\": \"X\", ";
    append_where(out_, b.device, b.stream);
    out_ += ", \"ts\": ";
    append_us(out_, b.ns, origin_);
    out_ += ", \"dur\": ";
    append_us(out_, end_ns, b.ns);
    if (!args.empty()) {
      out_ += ", \"args\": {";
      out_ += args;
      out_ += '}';
    }
    out_ += "}";
  }

  void wait_flow(const record& r) {
    const position to{r.device, r.stream, r.start_ns};
    const position_key key{r.from_stream, r.from_seq};
    const recent_slot* source =
        recent_.empty() ? nullptr : &recent_[position_hash()(key) % recent_positions];
    if (source != nullptr && source->key == key) {
      flow(source->where, to);
    } else if (pending_waits_.size() < max_pending_waits) {
      pending_waits_.emplace(position_key{r.from_stream, r.from_seq}, to);
    }
  }

  //! Keeps r's position for the waits written after it; draws the arrows of
  //! those written before it.
  void remember(const record& r) {
    const position_key key{r.stream, r.seq};
    const position here{r.device, r.stream, r.end_ns};
    if (recent_.empty()) recent_.resize(recent_positions);  // on the writer thread, when needed
    if (!pending_waits_.empty()) {
      const auto range = pending_waits_.equal_range(key);
      for (auto w = range.first; w != range.second; ++w) flow(here, w->second);
      pending_waits_.erase(range.first, range.second);
    }
    recent_[position_hash()(key) % recent_positions] = recent_slot{key, here};
  }

  void flush() {
    // Opened at the first write (on the writer thread, or by finish() for a
    // short trace): creating or truncating the file costs the traced program
    // nothing while it runs.
    if (file_ == nullptr && !failed_) {
      std::lock_guard<std::mutex> lock(path_m_);
      file_ = std::fopen(path_.c_str(), "w");
      failed_ = file_ == nullptr;
    }
    if (file_ != nullptr && !failed_ && !out_.empty() &&
        std::fwrite(out_.data(), 1, out_.size(), file_) != out_.size())
      failed_ = true;
    out_.clear();
  }

  const std::int64_t origin_;
  std::mutex path_m_;  // path_, final_path_
  std::string path_;
  std::string final_path_;  // not empty: path_ is renamed to it once written
  std::FILE* file_ = nullptr;
  std::thread thread_;

  std::mutex m_;  // queue_, spares_, stopping_
  std::condition_variable work_, space_, started_cv_;
  std::deque<std::vector<record>> queue_;
  std::vector<std::vector<record>> spares_;
  bool stopping_ = false;
  bool started_ = false;  // the writer thread runs (trace_begin waits for it)

  // The writer thread's own (then finish()'s, once it has stopped).
  bool failed_ = false;
  std::string out_;
  bool first_ = true;
  std::size_t operations_ = 0;
  std::uint64_t flows_ = 0;
  std::map<std::uint64_t, stream_track> streams_;
  std::set<int> devices_;
  std::set<std::uint64_t> host_threads_;
  std::uint64_t last_stream_ = 0, last_host_thread_ = 0;
  std::vector<recent_slot> recent_;
  std::unordered_multimap<position_key, position, position_hash> pending_waits_;
  std::unordered_map<std::uint64_t, open_range> open_ranges_;
  std::unordered_map<std::uint64_t, std::int64_t> early_ends_;
};

struct buffer {
  std::mutex m;
  std::vector<record> chunk;
};

struct collection {
  std::mutex m;  // buffers, path, writer, at_exit, from_environment, clock_error_ns
  std::vector<std::shared_ptr<buffer>> buffers;
  std::string path;
  std::shared_ptr<writer> w;
  bool at_exit = false;
  bool from_environment = false;
  std::map<int, std::int64_t> clock_error_ns;  // per device, from the backend's calibration
  std::string source;                          // trace::note_source
  // SLUICE_TRACE's value, and whether its file already has the rank in its name.
  std::string env_path;
  bool rank_named = false;
  // The process's rank (note_rank; the launcher's rank until then): kept
  // from one trace to the next, as the process's rank does not change.
  rank_info rank;
  bool has_rank = false;
};

collection& the_collection() {
  static auto* c = new collection();  // never destroyed: worker threads may submit at exit
  return *c;
}

thread_local std::shared_ptr<buffer> this_thread_buffer;

//! Every thread's partly filled chunk (to the writer `w`, or dropped without one).
void drain_buffers(const std::shared_ptr<writer>& w) {
  auto& c = the_collection();
  std::vector<std::vector<record>> chunks;
  {
    std::lock_guard<std::mutex> lock(c.m);
    for (auto& b : c.buffers) {
      std::lock_guard<std::mutex> inner(b->m);
      if (b->chunk.empty()) continue;
      // Moved out, not swapped: the thread keeps its chunk's memory for the
      // next trace (a fresh chunk costs page faults on the thread that fills it).
      chunks.emplace_back(std::make_move_iterator(b->chunk.begin()),
                          std::make_move_iterator(b->chunk.end()));
      b->chunk.clear();
    }
  }
  if (w != nullptr)
    for (auto& chunk : chunks) (void)w->push(std::move(chunk));
}

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

void append_record_events(std::string& out, const record& r, std::int64_t origin_ns) {
  append_enqueue_event(out, r, origin_ns);
  if (is_marker(r)) return;
  out += ",\n";
  append_op_event(out, r, origin_ns);
}

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

std::uint64_t new_range_id() noexcept {
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
    buffer& b = *this_thread_buffer;
    std::vector<record> full;
    {
      std::lock_guard<std::mutex> lock(b.m);
      if (b.chunk.capacity() == 0) b.chunk.reserve(chunk_records);
      b.chunk.push_back(std::move(r));
      if (b.chunk.size() < chunk_records) return;
      full.swap(b.chunk);
    }
    std::shared_ptr<writer> w;
    {
      auto& c = the_collection();
      std::lock_guard<std::mutex> lock(c.m);
      w = c.w;
    }
    if (w == nullptr) return;  // no trace: dropped
    std::vector<record> spare = w->push(std::move(full));
    if (spare.capacity() != 0) {
      std::lock_guard<std::mutex> lock(b.m);
      if (b.chunk.capacity() == 0) b.chunk.swap(spare);
    }
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

void note_source(const std::string& args) noexcept {
  auto& c = the_collection();
  try {
    std::lock_guard<std::mutex> lock(c.m);
    c.source = args;
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: the trace source is left out\n");
  }
}

int launcher_rank() noexcept {
  // Open MPI, PMIx launchers, MPICH's Hydra (and Intel MPI), MVAPICH.
  for (const char* name :
       {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "MV2_COMM_WORLD_RANK"}) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0') continue;
    int rank = -1;
    const char* end = v + std::char_traits<char>::length(v);
    const auto r = std::from_chars(v, end, rank);
    if (r.ec == std::errc() && r.ptr == end && rank >= 0) return rank;
  }
  return -1;
}

std::string rank_path(const std::string& path, int rank) {
  const std::string r = std::to_string(rank);
  if (path.find("%r") != std::string::npos) {
    std::string out;
    for (std::size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'r') {
        out += r;
        ++i;
      } else {
        out += path[i];
      }
    }
    return out;
  }
  const std::size_t slash = path.rfind('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t dot = path.rfind('.');
  // An extension: a dot in the last name, not its first character ("dir/.trace" has none).
  if (dot == std::string::npos || dot <= name) return path + ".rank" + r;
  return path.substr(0, dot) + ".rank" + r + path.substr(dot);
}

std::string host_identity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  return std::string(host) + (boot.empty() ? "" : " " + boot);
}

void note_span(std::uint64_t range, const char* cat, std::string args) noexcept {
  try {
    auto& t = the_spans();
    std::lock_guard<std::mutex> lock(t.m);
    t.spans[range] = {cat, std::move(args)};
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: a span's arguments are left out\n");
  }
}

void note_rank(const rank_info& r) noexcept {
  auto& c = the_collection();
  try {
    std::lock_guard<std::mutex> lock(c.m);
    // The first; a later one only where measured against more ranks.
    if (!c.has_rank || c.rank.reference < 0 || (r.reference >= 0 && r.ranks > c.rank.ranks)) {
      c.rank = r;
      c.has_rank = true;
    }
    if (c.from_environment && !c.rank_named && c.w != nullptr && r.rank >= 0) {
      c.w->rename_at_end(rank_path(c.env_path, r.rank));
      c.rank_named = true;
    }
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: the rank is left out\n");
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
  // One file per rank (docs/api.md "Tracing"): never two processes on one file.
  // Under a launcher the rank is known now; otherwise the file has a name of
  // this process's own (host and pid) until it is written, then the rank's
  // name (a communicator gave the process one) or `path`.
  const int rank = launcher_rank();
  std::string file = path;
  if (rank >= 0) {
    file = rank_path(path, rank);
  } else {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    file += std::string(".") + host + "." + std::to_string(getpid()) + ".part";
  }
  trace_begin(file);
  auto& c = the_collection();
  std::lock_guard<std::mutex> lock(c.m);
  c.from_environment = true;
  c.env_path = path;
  c.rank_named = rank >= 0;
  if (rank >= 0 && !c.has_rank) {
    c.rank.rank = rank;
    c.has_rank = true;
  }
  if (rank < 0) {
    if (c.has_rank && c.rank.rank >= 0) {
      c.w->rename_at_end(rank_path(path, c.rank.rank));
      c.rank_named = true;
    } else {
      c.w->rename_at_end(path);
    }
  }
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
