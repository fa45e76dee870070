// The activity tracer (activity_tracer.hpp): operations tied to the source's
// activity records through external correlation ids, placed on the host clock
// (the clocks' calibration: activity_clock.cpp).
#include "trace/activity_tracer.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <utility>

namespace sluice::detail {

namespace {

bool device_kind(const char* k) { return activity_device_kind(k); }

bool is_wait(std::string_view k) { return k == "wait" || k == "wait_value"; }

std::string demangled(const std::string& name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name.c_str(), nullptr, nullptr, &status);
  if (d == nullptr || status != 0) {
    std::free(d);
    return name;
  }
  std::string out(d);
  std::free(d);
  return out;
}

const char* kind_of(activity_record::type t) {
  switch (t) {
    case activity_record::type::copy: return "copy";
    case activity_record::type::fill: return "fill";
    case activity_record::type::kernel: break;
  }
  return "kernel";
}

struct key_hash {
  std::size_t operator()(const std::pair<std::uint64_t, std::uint64_t>& k) const noexcept {
    return static_cast<std::size_t>((k.first * 0x9E3779B97F4A7C15ULL) ^ k.second);
  }
};

}  // namespace

bool activity_tracer::begin(activity_source* source, std::string* why) {
  if (source == nullptr) return false;
  if (!source->start(why)) return false;
  {
    std::lock_guard<std::mutex> lock(m_);
    host_runs_.clear();
    streams_.clear();
  }
  // A thread's open() that sees the new epoch reserves its slots for this
  // trace (an operation opened in the same instant may land in the last).
  epoch_.fetch_add(1, std::memory_order_release);
  source_.store(source, std::memory_order_relaxed);
  begin_ = calibrate();
  return true;
}

bool activity_device_kind(const char* kind) noexcept {
  // Most enqueues that are not device work (record, wait, wait_value,
  // write_value, range markers) are told apart by their first letter.
  if (kind == nullptr || (kind[0] != 'c' && kind[0] != 'f' && kind[0] != 'k')) return false;
  const std::string_view k(kind);
  return k == "copy" || k == "fill" || k == "copy_peer" || k == "copy_peer_batch" || k == "kernel";
}

activity_tracer::activity_tracer(bool counter) noexcept
    : counter_(counter), serial_([] {
        static std::atomic<std::uint64_t> next{1};
        return next.fetch_add(1, std::memory_order_relaxed);
      }()) {}

activity_tracer::thread_ops::~thread_ops() {
  chunk* c = head.next.load(std::memory_order_relaxed);
  while (c != nullptr) {
    chunk* n = c->next.load(std::memory_order_relaxed);
    delete c;
    c = n;
  }
}

activity_tracer::thread_ops& activity_tracer::mine() {
  // The process has one tracer; the unit tests make several, one after another.
  thread_local std::uint64_t owner = 0;
  thread_local std::shared_ptr<thread_ops> ops;
  if (owner != serial_) [[unlikely]] {
    owner = serial_;
    ops = std::make_shared<thread_ops>();
    std::lock_guard<std::mutex> lock(m_);
    // Buffers of threads that ended, holding no operation of the trace now
    // collected (or of a trace still to be ended), go.
    const std::uint64_t now = epoch_.load(std::memory_order_acquire);
    threads_.erase(std::remove_if(threads_.begin(), threads_.end(),
                                  [now](const std::shared_ptr<thread_ops>& t) {
                                    return t.use_count() == 1 &&
                                           t->epoch.load(std::memory_order_acquire) < now;
                                  }),
                   threads_.end());
    threads_.push_back(ops);
  }
  return *ops;
}

activity_tracer::slot* activity_tracer::open(activity_source** pushed, bool push) {
  thread_ops& t = mine();
  const std::uint64_t e = epoch_.load(std::memory_order_acquire);
  if (t.epoch.load(std::memory_order_relaxed) != e) [[unlikely]] {
    // The first operation of this thread in this trace: its slots of earlier
    // traces are reused unless one is still open (an operation that began
    // before the trace did and encloses this one: then this trace's slots
    // follow it; end() tells them apart by their epoch).
    bool still_open = false;
    for (chunk* c = &t.head; c != nullptr && !still_open;
         c = c->next.load(std::memory_order_relaxed)) {
      const std::uint32_t n = c->reserved.load(std::memory_order_relaxed);
      for (std::uint32_t i = 0; i < n && !still_open; ++i)
        still_open = c->slots[i].state.load(std::memory_order_relaxed) == slot::open_state;
    }
    if (!still_open) {
      const std::lock_guard<spin_mutex> lock(t.m);
      for (chunk* c = &t.head; c != nullptr; c = c->next.load(std::memory_order_relaxed))
        c->reserved.store(0, std::memory_order_relaxed);
      t.tail = &t.head;
    }
    t.epoch.store(e, std::memory_order_release);
    t.next_id = t.end_id = 0;  // ids of this trace come after its begin()
  }
  if (t.next_id == t.end_id) [[unlikely]] {
    t.next_id = next_id_.fetch_add(id_block, std::memory_order_relaxed);
    t.end_id = t.next_id + id_block;
  }
  chunk* c = t.tail;
  std::uint32_t n = c->reserved.load(std::memory_order_relaxed);
  if (n == chunk::size) [[unlikely]] {
    chunk* next = c->next.load(std::memory_order_relaxed);
    if (next == nullptr) {
      next = new chunk;
      c->next.store(next, std::memory_order_release);
    }
    c = t.tail = next;
    n = 0;
  }
  slot& s = c->slots[n];
  s.state.store(slot::open_state, std::memory_order_relaxed);
  s.epoch = e;
  s.id = t.next_id++;
  c->reserved.store(n + 1, std::memory_order_release);
  *pushed = push ? source_.load(std::memory_order_relaxed) : nullptr;
  if (*pushed != nullptr) (*pushed)->push(s.id);
  return &s;
}

void activity_tracer::close(slot* s, activity_source* pushed) noexcept {
  if (pushed != nullptr) pushed->pop();
  s->state.store(slot::done_state, std::memory_order_release);
  // The thread's next operation fills the next slot (or the first of the
  // next chunk: then this reads past the chunk, which a prefetch may).
  const std::uintptr_t next = reinterpret_cast<std::uintptr_t>(s + 1);
  for (std::uintptr_t line = 0; line < sizeof(slot); line += 64)
    __builtin_prefetch(reinterpret_cast<const void*>(next + line), 1);
}

void activity_tracer::abandon(slot* s, activity_source* pushed) noexcept {
  if (pushed != nullptr) pushed->pop();
  s->state.store(slot::dropped_state, std::memory_order_release);
}

void activity_tracer::host_ran(std::uint64_t stream, std::uint64_t seq, std::int64_t end_ns) {
  if (source_.load(std::memory_order_relaxed) == nullptr) return;
  std::lock_guard<std::mutex> lock(m_);
  host_runs_.push_back(host_run{stream, seq, end_ns});
}

void activity_tracer::add_stream(void* native, std::uint64_t stream, int device, int priority) {
  activity_source* s = source_.load(std::memory_order_relaxed);
  std::uint32_t id = 0;
  if (s == nullptr || !s->stream_id(native, &id)) return;
  std::lock_guard<std::mutex> lock(m_);
  streams_[id] = track{stream, device, priority};
}

activity_summary activity_tracer::end(std::vector<trace::record>* out) {
  activity_summary sum;
  activity_source* src = source_.load(std::memory_order_relaxed);
  if (src == nullptr) return sum;
  end_ = calibrate();
  activity_batch batch;
  src->stop(&batch);
  source_.store(nullptr, std::memory_order_relaxed);
  std::vector<op> ops;
  std::unordered_map<std::uint32_t, track> streams;
  std::vector<host_run> host_runs;
  {
    std::lock_guard<std::mutex> lock(m_);
    const std::uint64_t e = epoch_.load(std::memory_order_relaxed);
    for (const auto& t : threads_) {
      // The owner may be opening and closing meanwhile (an operation that
      // ends as the trace does): only slots already done are read, and a
      // reset waits for this lock. A slot closed after this pass is not in
      // the trace.
      const std::lock_guard<spin_mutex> thread_lock(t->m);
      if (t->epoch.load(std::memory_order_acquire) != e) continue;
      for (chunk* c = &t->head; c != nullptr; c = c->next.load(std::memory_order_acquire)) {
        const std::uint32_t n = c->reserved.load(std::memory_order_acquire);
        for (std::uint32_t i = 0; i < n; ++i) {
          slot& sl = c->slots[i];
          if (sl.state.load(std::memory_order_acquire) != slot::done_state || sl.epoch != e)
            continue;
          ops.push_back(op{sl.id, std::move(sl.r)});
        }
      }
    }
    streams.swap(streams_);
    host_runs.swap(host_runs_);
  }
  if (counter_)
    for (op& o : ops) o.r.enqueue_ns = ticks_to_host(o.r.enqueue_ns);
  sum.dropped = batch.dropped;
  sum.settings = std::move(batch.settings);
  sum.activities = batch.activities.size();
  sum.correlations = batch.correlations.size();
  sum.clock_error_ns = clock_error();

  // Activities to operations: vendor correlation id -> external id -> op.
  std::sort(ops.begin(), ops.end(), [](const op& a, const op& b) { return a.id < b.id; });
  std::unordered_map<std::uint32_t, std::uint64_t> external;
  external.reserve(batch.correlations.size());
  for (const auto& c : batch.correlations) external[c.first] = c.second;
  struct span {
    std::int64_t start = 0, end = 0;
    bool timed = false;
  };
  std::vector<span> spans(ops.size());
  for (const activity_record& a : batch.activities) {
    if (a.end == 0 || a.end < a.start) continue;  // not complete
    const std::int64_t start = to_host(a.start);
    const std::int64_t end = to_host(a.end);
    const auto e = external.find(a.correlation);
    if (e != external.end()) {
      const auto it = std::lower_bound(ops.begin(), ops.end(), e->second,
                                       [](const op& o, std::uint64_t id) { return o.id < id; });
      if (it != ops.end() && it->id == e->second) {
        span& s = spans[static_cast<std::size_t>(it - ops.begin())];
        if (!s.timed || start < s.start) s.start = start;
        if (!s.timed || end > s.end) s.end = end;
        s.timed = true;
      }
      // An id of an operation that threw, or of an earlier trace: not shown.
      continue;
    }
    const auto t = streams.find(a.stream);
    if (t == streams.end()) {
      ++sum.foreign;
      continue;
    }
    // The user's own work on a sluice stream.
    trace::record r;
    r.kind = kind_of(a.what);
    r.label = a.what == activity_record::type::kernel ? demangled(a.name)
                                                      : std::string(r.kind) + " (user)";
    r.bytes = a.bytes;
    r.device = t->second.device;
    r.stream = t->second.stream;
    r.priority = t->second.priority;
    r.host_thread = 0;  // not enqueued through sluice: no host track
    r.enqueue_ns = start;
    r.start_ns = start;
    r.end_ns = end;
    out->push_back(std::move(r));
    ++sum.user_activities;
  }

  // Then in enqueue order, each stream's operations: the device-timed ones
  // as their activities say; the others where the stream's previous
  // operation ended (a wait: no earlier than what it waited for).
  std::vector<std::size_t> order(ops.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return ops[a].r.enqueue_ns < ops[b].r.enqueue_ns;
  });
  // Per stream, its device-timed operations' starts in stream order: a wait
  // whose end the trace cannot see ended no later than the next one started.
  std::unordered_map<std::uint64_t, std::vector<std::pair<std::uint64_t, std::int64_t>>> timed;
  for (std::size_t i = 0; i < ops.size(); ++i)
    if (spans[i].timed)
      timed[ops[i].r.stream].emplace_back(ops[i].r.seq,
                                          std::max(spans[i].start, ops[i].r.enqueue_ns));
  for (auto& t : timed) std::sort(t.second.begin(), t.second.end());
  std::unordered_map<std::uint64_t, std::int64_t> last_end;  // per stream
  std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, std::int64_t, key_hash> ends;
  // Host functions, per stream in stream order: an operation after one
  // (a later seq) is placed no earlier than its end.
  std::sort(host_runs.begin(), host_runs.end(), [](const host_run& a, const host_run& b) {
    return a.stream != b.stream ? a.stream < b.stream : a.seq < b.seq;
  });
  for (const std::size_t i : order) {
    trace::record& r = ops[i].r;
    std::int64_t& last = last_end[r.stream];
    for (auto h =
             std::lower_bound(host_runs.begin(), host_runs.end(), r.stream,
                              [](const host_run&x, std::uint64_t st) { return x.stream < st; });
         h != host_runs.end() && h->stream == r.stream && h->seq < r.seq; ++h)
      last = std::max(last, h->end);
    if (spans[i].timed) {
      r.start_ns = std::max(spans[i].start, r.enqueue_ns);
      r.end_ns = std::max(spans[i].end, r.start_ns);
    } else if (device_kind(r.kind)) {
      ++sum.left_out;
      continue;
    } else {
      r.start_ns = std::max(r.enqueue_ns, last);
      r.end_ns = r.start_ns;
      if (is_wait(r.kind)) {
        const auto w = r.from_stream != 0 ? ends.find({r.from_stream, r.from_seq}) : ends.end();
        if (w != ends.end()) {
          r.end_ns = std::max(r.end_ns, w->second);
        } else {
          // A flag's wait_value, or a wait on an event recorded outside the
          // trace: it ended where the stream's next device operation started,
          // at the latest (an instant when none follows).
          const auto t = timed.find(r.stream);
          if (t != timed.end()) {
            const auto next = std::upper_bound(
                t->second.begin(), t->second.end(), r.seq,
                [](std::uint64_t seq, const std::pair<std::uint64_t, std::int64_t>& x) {
                  return seq < x.first;
                });
            if (next != t->second.end()) r.end_ns = std::max(r.end_ns, next->second);
          }
        }
      }
    }
    last = std::max(last, r.end_ns);
    ends[{r.stream, r.seq}] = r.end_ns;
    out->push_back(std::move(r));
    ++sum.operations;
  }
  return sum;
}

activity_tracer& the_activity_tracer() {
  static auto* t = new activity_tracer(
      counter_clock_available());  // never destroyed: traces may be written at exit
  return *t;
}

}  // namespace sluice::detail
