#include "writer.hpp"

#include "chrome_json.hpp"
#include "spans.hpp"
#include "stream_names.hpp"

#include <sluice/backend.hpp>

#include <pthread.h>

#include <string_view>
#include <utility>

namespace sluice::detail::trace {

writer::writer(const std::string& path, std::int64_t origin) : origin_(origin) {
  path_ = path;
  out_.reserve(flush_bytes + 4096);
  out_ = "{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n";
  thread_ = std::thread([this] { run(); });
  // trace_begin returns once the writer thread is asleep, waiting for work:
  // its start-up is not charged to the first traced operations.
  std::unique_lock<std::mutex> lock(m_);
  started_cv_.wait(lock, [&] { return started_; });
}

writer::~writer() {
  stop();
  if (file_ != nullptr) std::fclose(file_);
}

std::vector<record> writer::push(std::vector<record>&& chunk) {
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

void writer::rename_at_end(const std::string& path) {
  std::lock_guard<std::mutex> lock(path_m_);
  final_path_ = path;
}

std::string writer::final_path() {
  std::lock_guard<std::mutex> lock(path_m_);
  return final_path_.empty() ? path_ : final_path_;
}

bool writer::finish(const std::map<int, std::int64_t>& clock_error_ns, const std::string& source,
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

void writer::stop() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stopping_ = true;
  }
  work_.notify_all();
  space_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void writer::run() {
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

void writer::next_event() {
  if (!first_) out_ += ",\n";
  first_ = false;
}

void writer::metadata(const char* name, int pid, const std::uint64_t* tid,
                      const std::string& args) {
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

void writer::flow(const position& from, const position& to) {
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

void writer::write(const record& r) {
  // A record of an earlier trace, completed after it ended: not this trace's.
  if (r.enqueue_ns < origin_) return;
  // An operation run by a graph launch is drawn on the track of the stream it
  // was captured from (chrome_json.cpp), not as a position of either stream.
  const bool in_graph = r.graph_stream != 0;
  const std::uint64_t track = in_graph ? r.graph_stream : r.stream;
  if (track != last_stream_) {
    streams_.emplace(track, stream_track{r.device, r.priority});
    devices_.insert(r.device);
    last_stream_ = track;
  }
  if (in_graph) {
    ++operations_;
    next_event();
    append_op_event(out_, r, origin_);
    if (out_.size() >= flush_bytes) flush();
    return;
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

void writer::range(const record& r) {
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

void writer::range_event(const open_range& b, std::int64_t end_ns, std::uint64_t id) {
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

void writer::wait_flow(const record& r) {
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

void writer::remember(const record& r) {
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

void writer::flush() {
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

}  // namespace sluice::detail::trace
