// The writer of one trace's file: a thread that formats the chunks of
// records handed to it and writes them while the program runs, and, at the
// end, what only the end knows (tracks, clock errors, the trace's own
// metadata). Internal.
#pragma once

#include "trace.hpp"

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace sluice::detail::trace {

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

//! One trace being written: the file, a thread that formats and writes the
//! chunks handed to it, and what the end needs (tracks, counts).
class writer {
 public:
  writer(const std::string& path, std::int64_t origin);
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;
  ~writer();

  //! Queues a full chunk (waits while max_queued are queued); returns an
  //! emptied chunk to fill next, when one is spare. After stop(): dropped.
  std::vector<record> push(std::vector<record>&& chunk);

  //! Once written, the file is renamed to `path` (any thread).
  void rename_at_end(const std::string& path);
  //! The file's name once written.
  std::string final_path();

  //! Writes what is queued, then the tracks' metadata and the end of the
  //! document, and closes the file. False if the file could not be written.
  //! `trace_args`: JSON members of the trace's own metadata event ("sluice_trace").
  bool finish(const std::map<int, std::int64_t>& clock_error_ns, const std::string& source,
              const std::string& trace_args, std::size_t* operations);

 private:
  void stop();
  void run();
  void next_event();
  void metadata(const char* name, int pid, const std::uint64_t* tid, const std::string& args);
  void flow(const position& from, const position& to);
  void write(const record& r);
  //! A trace_range's markers, paired by the range's id (in either order).
  void range(const record& r);
  void range_event(const open_range& b, std::int64_t end_ns, std::uint64_t id);
  void wait_flow(const record& r);
  //! Keeps r's position for the waits written after it; draws the arrows of
  //! those written before it.
  void remember(const record& r);
  void flush();

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

}  // namespace sluice::detail::trace
