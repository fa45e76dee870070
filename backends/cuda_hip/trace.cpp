// Tracing on the GPU backend (include/sluice/trace.hpp). Each traced device
// operation gets two timing events on its stream, one before and one after it,
// from a per-device pool. Device times become host-clock times through a base
// event per device: recorded on an idle stream of the tracer and waited for,
// its host time is the middle of the shortest of a few record-to-return
// windows (the file's device times are that exact against the host clock).
// Records are read when their end event has completed: in bulk as the pending
// list grows, and at trace_end(), which leaves out (and says so) operations
// whose end event has not completed. Host functions are timed by the host
// clock on the sluice thread that runs them, so batching is unchanged.
#include "gpu.hpp"
#include "host_functions.hpp"

#include <sluice/trace.hpp>

#include <cmath>
#include <cstdio>

namespace sluice::detail {

struct traced_op_state {
  stream_state* stream = nullptr;
  std::unique_lock<std::mutex> lock;  // the stream's trace_m, from begin to finish
  trace::record r;
  api::event_t start{};
  api::event_t end{};
};

namespace {

struct pending {
  trace::record r;
  api::event_t start{};
  api::event_t end{};
};

struct device_clock {
  bool calibrated = false;
  api::stream_t stream{};  // the tracer's own, idle stream on the device
  api::event_t base{};
  std::int64_t base_ns = 0;    // host time of `base`
  std::int64_t window_ns = 0;  // the record-to-return window it was taken from
};

class tracer {
 public:
  //! A timing event of device d, from the pool or new.
  api::event_t take(int d) {
    std::lock_guard<std::mutex> lock(m_);
    grow(d);
    return take_locked(d);
  }
  void give(int d, api::event_t e) noexcept {
    std::lock_guard<std::mutex> lock(m_);
    give_locked(d, e);
  }

  //! A traced operation was enqueued: keep it until its end event completed.
  void add(pending&& p) {
    std::lock_guard<std::mutex> lock(m_);
    ensure_clock(p.r.device);
    ops_.push_back(std::move(p));
    if (ops_.size() >= next_harvest_) {
      harvest_locked(false);
      next_harvest_ = std::max<std::size_t>(harvest_step, 2 * ops_.size());
    }
  }

  //! trace_end(): every completed record to the collection; the rest left out.
  void collect() {
    std::lock_guard<std::mutex> lock(m_);
    const std::size_t left_out = harvest_locked(true);
    if (left_out != 0)
      std::fprintf(stderr,
                   "sluice: trace: %zu operations had not completed at trace_end() and are left "
                   "out (synchronize before trace_end to include them)\n",
                   left_out);
    next_harvest_ = harvest_step;
    for (auto& c : clocks_) c.calibrated = false;  // the next trace calibrates afresh
  }

 private:
  static constexpr std::size_t harvest_step = 16384;
  static constexpr std::size_t pool_limit = 4096;  // events kept per device

  void grow(int d) {
    if (static_cast<std::size_t>(d) >= events_.size()) {
      events_.resize(static_cast<std::size_t>(d) + 1);
      clocks_.resize(static_cast<std::size_t>(d) + 1);
    }
  }

  api::event_t take_locked(int d) {
    auto& pool = events_[static_cast<std::size_t>(d)];
    if (!pool.empty()) {
      const api::event_t e = pool.back();
      pool.pop_back();
      return e;
    }
    const scoped_device guard(d);
    api::event_t e{};
    check(api::event_create(&e, true, false), "sluice tracing: creating a timing event on device ",
          d);
    return e;
  }

  void give_locked(int d, api::event_t e) noexcept {
    auto& pool = events_[static_cast<std::size_t>(d)];
    if (pool.size() < pool_limit) {
      try {
        pool.push_back(e);
        return;
      } catch (...) {
      }
    }
    (void)api::event_destroy(e);
  }

  //! The base event of device d for this trace (see the file's comment).
  void ensure_clock(int d) {
    grow(d);
    device_clock& c = clocks_[static_cast<std::size_t>(d)];
    if (c.calibrated) return;
    const scoped_device guard(d);
    if (c.stream == api::stream_t{}) {
      check(api::stream_create(&c.stream, api::default_priority),
            "sluice tracing: creating the tracer's stream on device ", d);
      check(api::event_create(&c.base, true, false),
            "sluice tracing: creating the base event on device ", d);
    }
    // Each attempt re-records the base, so the last attempt is the one kept:
    // stop at the first window under 20 us (a few us on an idle device).
    for (int attempt = 0; attempt < 5; ++attempt) {
      const std::int64_t before = trace::now_ns();
      check(api::event_record(c.base, c.stream),
            "sluice tracing: recording the base event on device ", d);
      check(api::event_synchronize(c.base), "sluice tracing: waiting for the base event on device ",
            d);
      const std::int64_t after = trace::now_ns();
      c.base_ns = before + (after - before) / 2;
      c.window_ns = after - before;
      if (c.window_ns < 20000) break;
    }
    c.calibrated = true;
  }

  //! Device time of e on device d as host time; false if it cannot be read.
  bool host_time(int d, api::event_t e, std::int64_t* ns) noexcept {
    const device_clock& c = clocks_[static_cast<std::size_t>(d)];
    float ms = 0.0F;
    if (!api::event_elapsed(&ms, c.base, e).ok()) {
      api::clear_last_error();
      return false;
    }
    *ns = c.base_ns + std::llround(static_cast<double>(ms) * 1e6);
    return true;
  }

  //! Moves completed records to the collection and frees their events. With
  //! `all`, the incomplete ones are dropped too; returns how many those were.
  std::size_t harvest_locked(bool all) {
    std::size_t dropped = 0;
    std::vector<pending> keep;
    for (pending& p : ops_) {
      const int d = p.r.device;
      const auto q = api::event_query(p.end);
      if (q.code == api::not_ready && !all) {
        keep.push_back(std::move(p));
        continue;
      }
      bool timed = q.ok();
      if (!timed) api::clear_last_error();
      if (timed) {
        timed = host_time(d, p.end, &p.r.end_ns);
        if (p.start == api::event_t{}) {
          p.r.start_ns = p.r.end_ns;  // a marker: one event
        } else {
          timed = timed && host_time(d, p.start, &p.r.start_ns);
        }
      }
      if (timed) {
        if (p.r.start_ns > p.r.end_ns) p.r.start_ns = p.r.end_ns;
        trace::submit(std::move(p.r));
      } else {
        ++dropped;
      }
      if (p.start != api::event_t{}) give_locked(d, p.start);
      give_locked(d, p.end);
    }
    ops_.swap(keep);
    return dropped;
  }

  std::mutex m_;
  std::vector<std::vector<api::event_t>> events_;  // per device
  std::vector<device_clock> clocks_;                // per device
  std::vector<pending> ops_;
  std::size_t next_harvest_ = harvest_step;
};

tracer& the_tracer() {
  static auto* t = new tracer();  // never destroyed: traces may be written at exit
  return *t;
}

//! The record every traced operation starts from.
trace::record new_record(stream_state& s, const char* kind, std::size_t bytes) {
  trace::record r;
  r.kind = kind;
  r.bytes = bytes;
  r.device = s.device;
  r.stream = s.trace_id;
  r.priority = s.native_priority;
  r.seq = s.trace_seq.fetch_add(1, std::memory_order_relaxed) + 1;
  r.host_thread = trace::thread_id();
  r.enqueue_ns = trace::now_ns();
  return r;
}

}  // namespace

void traced_op::begin(stream_state& s, const char* kind, std::size_t bytes) {
  auto st = std::make_unique<traced_op_state>();
  st->stream = &s;
  st->lock = std::unique_lock<std::mutex>(s.trace_m);
  st->start = the_tracer().take(s.device);
  try {
    st->end = the_tracer().take(s.device);
  } catch (...) {
    the_tracer().give(s.device, st->start);
    throw;
  }
  const auto recorded = api::event_record(st->start, s.native);
  if (!recorded.ok()) {
    the_tracer().give(s.device, st->start);
    the_tracer().give(s.device, st->end);
    check(recorded, "sluice tracing: recording a timing event on a stream of device ", s.device);
  }
  st->r = new_record(s, kind, bytes);
  state_ = st.release();
}

void traced_op::path(const char* p) noexcept {
  if (state_ != nullptr) state_->r.path = p;
}

void traced_op::waits_for(std::uint64_t stream, std::uint64_t seq) noexcept {
  if (state_ != nullptr && stream != 0) {
    state_->r.from_stream = stream;
    state_->r.from_seq = seq;
  }
}

std::uint64_t traced_op::seq() const noexcept { return state_ != nullptr ? state_->r.seq : 0; }

void traced_op::finish() {
  std::unique_ptr<traced_op_state> st(state_);
  state_ = nullptr;
  stream_state& s = *st->stream;
  const auto recorded = api::event_record(st->end, s.native);
  if (!recorded.ok()) {
    the_tracer().give(s.device, st->start);
    the_tracer().give(s.device, st->end);
    check(recorded, "sluice tracing: recording a timing event on a stream of device ", s.device);
  }
  st->lock.unlock();
  the_tracer().add(pending{std::move(st->r), st->start, st->end});
}

void traced_op::abandon() noexcept {
  // The operation threw before it was enqueued: its start event was recorded
  // and completes on its own; both go back to the pool.
  std::unique_ptr<traced_op_state> st(state_);
  state_ = nullptr;
  the_tracer().give(st->stream->device, st->start);
  the_tracer().give(st->stream->device, st->end);
}

namespace {

struct traced_task final : host_task {
  traced_task(std::unique_ptr<host_task> t, trace::record rec)
      : inner(std::move(t)), r(std::move(rec)) {}
  void run() override {
    r.start_ns = trace::now_ns();
    struct stamp_end {
      trace::record& r;
      ~stamp_end() {
        r.end_ns = trace::now_ns();
        trace::submit(std::move(r));
      }
    } end{r};
    inner->run();  // what it throws is reported by the batch (HOST-4)
  }
  std::unique_ptr<host_task> inner;
  trace::record r;
};

}  // namespace

std::unique_ptr<host_task> traced_host_task(stream_state& s, std::unique_ptr<host_task> task) {
  return std::make_unique<traced_task>(std::move(task), new_record(s, "host_func", 0));
}

bool trace_supported() noexcept { return true; }

void trace_backend_collect() { the_tracer().collect(); }

void enqueue_trace_marker(stream_ref s, const std::string& name, bool begin) {
  auto& st = checked(s, begin ? "sluice::trace_range" : "sluice::trace_range::~trace_range");
  if (!trace::enabled()) return;
  // One event: a marker takes no time on the stream.
  std::unique_lock<std::mutex> lock(st.trace_m);
  const api::event_t e = the_tracer().take(st.device);
  const auto recorded = api::event_record(e, st.native);
  if (!recorded.ok()) {
    the_tracer().give(st.device, e);
    check(recorded, "sluice::trace_range: recording a timing event on a stream of device ",
          st.device);
  }
  trace::record r = new_record(st, begin ? "range_begin" : "range_end", 0);
  r.label = name;
  lock.unlock();
  the_tracer().add(pending{std::move(r), api::event_t{}, e});
}

}  // namespace sluice::detail
