// The host backend's graph executor. A launch is one operation of its
// stream; when the stream reaches it, the recorded operations run on the
// backend's workers as their dependencies complete: each ready vertex gets a
// lane (an internal stream of its device), so independent branches run on
// different workers at once (GRAPH-15) and a vertex that waits (a flag)
// parks only its lane. Host functions run on the host-function threads.
// The launch completes when its last vertex does.
#include "chaos.hpp"
#include "graph.hpp"
#include "host_functions.hpp"
#include "mutation.hpp"
#include "range_map.hpp"
#include "strided.hpp"

#include <algorithm>
#include <optional>
#include <utility>

namespace sluice {

namespace detail {

void enqueue_wait(stream_state& s, stream_state& other, seq_t target);  // stream.cpp

//! A program and what its launches need precomputed.
struct exec_plan {
  std::shared_ptr<const graph_program> program;
  std::vector<std::vector<std::size_t>> next;  // successors
  std::vector<std::size_t> roots;
  std::vector<std::size_t> deps;     // per vertex: how many it waits for
  std::vector<std::size_t> records;  // the record vertices
  std::vector<int> devices;          // the graph's device and its streams', once each
};

struct exec_state {
  std::mutex m;  // launches in call order; update()
  std::shared_ptr<const exec_plan> plan;
  stream_state* last_stream = nullptr;  // the previous launch's stream (a reference) and seq
  seq_t last_seq = 0;
  // The allocation map's generation at which every buffer the plan uses was
  // last found alive (0: never): unchanged, a launch needs no lookup.
  std::atomic<std::uint64_t> memory_checked{0};
  std::atomic<std::uint64_t> registrations_checked{0};  // the same for the registrations
  // Per record vertex (exec_plan::records), the marker stream its launches'
  // latches park on, made at the first launch and kept (a reference each):
  // launches of one exec run one after another, so each latch queues behind
  // the previous launch's, already open.
  std::vector<stream_state*> markers;
  ~exec_state() {
    if (last_stream != nullptr) last_stream->release();
    for (stream_state* marker : markers)
      if (marker != nullptr) marker->release();
  }
};

namespace {

std::shared_ptr<const exec_plan> make_plan(std::shared_ptr<const graph_program> p) {
  auto plan = std::make_shared<exec_plan>();
  plan->next = successors(*p);
  plan->devices.push_back(p->device);
  for (std::size_t v = 0; v < p->vertices.size(); ++v) {
    const vertex& x = p->vertices[v];
    if (x.deps.empty()) plan->roots.push_back(v);
    plan->deps.push_back(x.deps.size());
    if (x.kind == vertex_kind::record) plan->records.push_back(v);
    if (std::find(plan->devices.begin(), plan->devices.end(), x.device) == plan->devices.end())
      plan->devices.push_back(x.device);
  }
  plan->program = std::move(p);
  return plan;
}

//! An event's record by one launch: a marker stream parked on this latch
//! until the record vertex runs, so that waits issued after launch() wait
//! for that point (GRAPH-7).
struct record_latch {
  std::atomic<int> state{0};  // 0 idle, 1 parked, 2 open
  stream_state* stream = nullptr;
  std::shared_ptr<record_state> rec;
  // A parked latch resumes on the opening thread (its op is a check, never
  // user code): no worker wake-up per record.
  void open() noexcept {
    rec->timestamp_ns.store(now_ns(), std::memory_order_relaxed);
    if (state.exchange(2) == 1) resume_inline(*stream);
  }
};

struct latch_op final : op {
  // The record vertex shows in traces where it opens this (run_record).
  explicit latch_op(std::shared_ptr<record_latch> l) : latch(std::move(l)) { quiet = true; }
  // A compare-and-swap: it parks its marker stream on the launching thread.
  bool runs_inline() const noexcept override { return true; }
  step run(stream_state&) override {
    int idle = 0;
    return latch->state.compare_exchange_strong(idle, 1) ? step::parked : step::done;
  }
  std::shared_ptr<record_latch> latch;
};

struct launch_state {
  std::shared_ptr<const exec_plan> plan;
  stream_state* stream = nullptr;  // the launch's stream: its queue holds it meanwhile
  std::unique_ptr<std::atomic<std::size_t>[]> waiting;  // unfinished deps per vertex
  std::atomic<std::size_t> left{0};                     // unfinished vertices
  std::vector<std::shared_ptr<record_latch>> latches;   // per record vertex (plan.records)
  seq_t seq = 0;                                        // the launch's op on `stream`
  std::uint64_t trace_launch = 0;                       // its id in traces (0: not traced)
  bool skip_actions = false;                            // (test-only mutations)
  bool detached = false;
};

void dispatch(const std::shared_ptr<launch_state>& l, std::vector<std::size_t> ready,
              stream_state* lane);

//! Vertex v of launch l has finished (on `lane`, or null off a lane): start
//! what it unblocks; the last one completes the launch's operation.
void finished(std::shared_ptr<launch_state> l, std::size_t v, stream_state* lane) noexcept {
  std::vector<std::size_t> ready;
  if (!mutation::is(mutation::kind::graph_ignores_dependencies)) {
    for (std::size_t w : l->plan->next[v])
      if (l->waiting[w].fetch_sub(1) == 1) ready.push_back(w);
  }
  if (!ready.empty()) dispatch(l, std::move(ready), lane);
  if (l->left.fetch_sub(1) == 1 && !l->detached) {
    stream_state* s = l->stream;
    if (complete_head(*s)) s->dev->make_runnable(s);
  }
}

//! While tracing: the record of launch l's vertex v, of `kind`, run on the
//! internal stream `lane`, drawn on the track of the stream it was captured
//! from; enqueued now.
trace::record vertex_record(const launch_state& l, std::size_t v, const char* kind,
                            std::uint64_t lane) {
  const vertex& x = l.plan->program->vertices[v];
  trace::record r;
  r.kind = kind;
  r.device = x.device;
  r.stream = lane;
  r.launch = l.trace_launch;
  r.vertex = static_cast<std::uint32_t>(v + 1);
  r.graph_stream = x.stream;
  r.host_thread = trace::thread_id();
  r.enqueue_ns = trace::now_ns();
  return r;
}

//! A vertex's record, ended now, goes before the vertex lets its launch
//! complete (finished): a trace ended once the launch's stream synchronized
//! has it.
void submit_ended(std::unique_ptr<trace::record>& r) noexcept {
  r->end_ns = trace::now_ns();
  trace::submit(std::move(*r));
  r.reset();
}

//! A recorded op run by a launch: the op stays the graph's.
struct vertex_op final : op {
  vertex_op(op& o, std::shared_ptr<launch_state> l, std::size_t v)
      : inner(o), launch(std::move(l)), index(v) {}
  void describe(trace::record& r) const override { inner.describe(r); }
  bool runs_inline() const noexcept override { return inner.runs_inline(); }
  step run(stream_state& s) override {
    const step r = launch->skip_actions ? step::done : inner.run(s);
    if (r == step::done) {
      if (trace != nullptr) [[unlikely]]
        submit_ended(trace);
      finished(launch, index, &s);
    }
    return r;
  }
  op& inner;
  std::shared_ptr<launch_state> launch;
  std::size_t index;
};

//! Fires when a record vertex's marker stream has completed its latch: the
//! event is complete before the vertex counts as finished, so a launch
//! never completes ahead of the records it made (GRAPH-7).
struct record_done final : listener {
  record_done(std::shared_ptr<launch_state> l, std::size_t v) : launch(std::move(l)), index(v) {}
  void on_complete() noexcept override {
    finished(std::move(launch), index, nullptr);
    delete this;
  }
  std::shared_ptr<launch_state> launch;
  std::size_t index;
};

//! A launch's record vertex in traces: an instant on the track of the stream
//! it was captured from, when the event completes there.
void trace_record_vertex(const launch_state& l, std::size_t v, const stream_state& marker) {
  trace::record r = vertex_record(l, v, "record", marker.trace_id);
  r.start_ns = r.end_ns = r.enqueue_ns;
  trace::submit(std::move(r));
}

//! A record vertex: opens its launch's latch (no lane needed).
void run_record(const std::shared_ptr<launch_state>& l, std::size_t v) noexcept {
  const auto& records = l->plan->records;
  const auto slot = std::lower_bound(records.begin(), records.end(), v) - records.begin();
  const auto& latch = l->latches[static_cast<std::size_t>(slot)];
  if (latch == nullptr) {  // the event is gone (or the mutation): nothing to record
    finished(l, v, nullptr);
    return;
  }
  latch->open();
  if (l->trace_launch != 0 && trace::enabled()) [[unlikely]]
    trace_record_vertex(*l, v, *latch->stream);
  // Out of memory here ends the process (this runs where no error can be reported).
  auto* done = new record_done(l, v);  // NOLINT(bugprone-unhandled-exception-at-new)
  if (!when_reached(*latch->stream, latch->rec->seq, done)) done->on_complete();
}

//! A recorded host function run by a launch: its exception goes to the
//! launch's stream (HOST-4 there).
struct vertex_task final : host_task {
  vertex_task(host_task& t, std::shared_ptr<launch_state> l, std::size_t v)
      : inner(t), launch(std::move(l)), index(v) {}
  void run() override {
    if (traced != nullptr) [[unlikely]]
      traced->start_ns = trace::now_ns();
    // Waiting for the launch from inside it would deadlock: HOST-3's checks
    // see the launch's stream as this function's own.
    const auto own = exchange_host_function_stream(launch->stream, launch->seq);
    std::optional<std::string> failure = run_host_task(inner);
    (void)exchange_host_function_stream(own.first, own.second);
    if (failure && !mutation::is(mutation::kind::lose_host_function_exceptions))
      launch->stream->failures.add(errc::host_function_failed, std::move(*failure));
    if (traced != nullptr) [[unlikely]]
      submit_ended(traced);
    finished(launch, index, nullptr);
  }
  host_task& inner;
  std::shared_ptr<launch_state> launch;
  std::size_t index;
  std::unique_ptr<trace::record> traced;  // while tracing: its record, the launch's
};

// The first ready vertex goes on `lane` (the one whose vertex just finished,
// still running it): its worker goes on with it without a wake-up, so a chain
// runs on one worker as the same operations enqueued on one stream would.
// The others each get a new lane: independent branches run at once.
void dispatch(const std::shared_ptr<launch_state>& l, std::vector<std::size_t> ready,
              stream_state* lane) {
  if (chaos::seed.load(std::memory_order_relaxed) != 0) [[unlikely]] {
    for (std::size_t i = ready.size(); i > 1; --i)
      std::swap(ready[i - 1], ready[chaos::draw() % i]);
  }
  const graph_program& p = *l->plan->program;
  for (std::size_t v : ready) {
    const vertex& x = p.vertices[v];
    auto& work = static_cast<const host_work&>(*x.work);
    if (x.kind == vertex_kind::record) {
      run_record(l, v);
      continue;
    }
    // While tracing, the op's record is the launch's, on x's stream's track.
    std::optional<trace::graph_scope> traced;
    if (l->trace_launch != 0) [[unlikely]]
      traced.emplace(l->trace_launch, static_cast<std::uint32_t>(v + 1), x.stream);
    stream_state* on = nullptr;
    const bool fresh = lane == nullptr || lane->dev->id != x.device;
    if (fresh) {
      on = engine().new_stream(engine().dev(x.device), l->stream->native_priority);
    } else {
      on = lane;  // behind the vertex it runs now
      lane = nullptr;
    }
    op* o = nullptr;
    if (work.task) {
      auto task = std::make_unique<vertex_task>(*work.task, l, v);
      if (l->trace_launch != 0) [[unlikely]]  // timed where it runs (its op is not)
        task->traced =
            std::make_unique<trace::record>(vertex_record(*l, v, "host_func", on->trace_id));
      o = make_host_function_op(std::move(task));
      o->quiet = l->trace_launch != 0;
    } else {
      o = new vertex_op(*work.action, l, v);
    }
    enqueue(*on, o);
    if (fresh) on->release();  // the lane's queue keeps it until its op completes
  }
}

struct launch_op final : op {
  explicit launch_op(std::shared_ptr<launch_state> l) : launch(std::move(l)) {}
  void describe(trace::record& r) const override { r.kind = "graph_launch"; }
  step run(stream_state&) override {
    launch->seq = seq;
    const auto& plan = *launch->plan;
    if (plan.program->vertices.empty()) return step::done;
    // After this the launch may complete (and this op be gone) at any time.
    std::vector<std::size_t> roots = plan.roots;
    if (mutation::is(mutation::kind::graph_ignores_dependencies)) {
      roots.resize(plan.program->vertices.size());
      for (std::size_t v = 0; v < roots.size(); ++v) roots[v] = v;
    }
    if (mutation::is(mutation::kind::graph_launch_returns_early)) {
      launch->detached = true;
      dispatch(std::shared_ptr<launch_state>(launch), std::move(roots), nullptr);
      return step::done;
    }
    dispatch(std::shared_ptr<launch_state>(launch), std::move(roots), nullptr);
    return step::handed_off;
  }
  std::shared_ptr<launch_state> launch;
};

const exec_plan& checked_plan(const exec_state* e, const char* api) {
  if (e == nullptr) fail(errc::invalid_handle, api, "the graph_exec is empty (moved from)");
  return *e->plan;
}

//! Makes the record latches of a launch and points each event at its latch.
void record_events_at_launch(exec_state& x, launch_state& l) {
  const graph_program& p = *l.plan->program;
  const auto& records = l.plan->records;
  if (records.empty()) return;
  l.latches.resize(records.size());
  if (x.markers.size() != records.size()) {  // the first launch, or after update()
    for (stream_state*& marker : x.markers)
      if (marker != nullptr) std::exchange(marker, nullptr)->release();
    x.markers.resize(records.size(), nullptr);
  }
  if (mutation::is(mutation::kind::graph_events_not_recorded)) return;
  for (std::size_t slot = 0; slot < records.size(); ++slot) {
    const std::size_t v = records[slot];
    const auto& link = static_cast<const host_work&>(*p.vertices[v].work).event;
    std::lock_guard<std::mutex> lock(link->m);
    event_state* e = link->target;
    if (e == nullptr) continue;  // destroyed: nobody can wait on it
    stream_state*& marker = x.markers[slot];
    if (marker != nullptr && marker->dev->id != e->device)
      std::exchange(marker, nullptr)->release();
    if (marker == nullptr)
      marker = engine().new_stream(engine().dev(e->device), host_default_priority);
    auto latch = std::make_shared<record_latch>();
    latch->stream = marker;
    latch->rec = std::make_shared<record_state>(latch->stream);
    {
      std::lock_guard<std::mutex> event_lock(e->m);
      latch->rec->seq = enqueue(*latch->stream, new latch_op(latch));
      e->last = latch->rec;
    }
    l.latches[slot] = std::move(latch);
  }
}

}  // namespace
}  // namespace detail

graph_exec graph::instantiate() const {
  if (!program_)
    detail::fail(errc::invalid_handle, "sluice::graph::instantiate",
                 "the graph is empty (moved from)");
  auto e = std::make_shared<detail::exec_state>();
  e->plan = detail::make_plan(program_);
  return detail::graph_access::make_exec(std::move(e));
}

void graph_exec::launch(stream_ref s) const {
  constexpr const char* api = "sluice::graph_exec::launch";
  const auto& plan = detail::checked_plan(state_.get(), api);
  auto& st = detail::checked(s, api);
  detail::refuse_if_capturing(st, api, "a graph cannot be launched onto a capturing stream");
  const auto& p = *plan.program;
  auto& e = *state_;
  const std::uint64_t now = detail::allocations().generation();
  const std::uint64_t registered = detail::registrations().generation();
  if (e.memory_checked.load(std::memory_order_relaxed) != now ||
      e.registrations_checked.load(std::memory_order_relaxed) != registered) {
    detail::check_memory_alive(p, api);
    e.memory_checked.store(now, std::memory_order_relaxed);
    e.registrations_checked.store(registered, std::memory_order_relaxed);
  }
  if (std::find(plan.devices.begin(), plan.devices.end(), st.dev->id) == plan.devices.end())
    detail::fail(errc::invalid_argument, api, "the stream belongs to device ", st.dev->id,
                 ", which is neither the graph's device (", p.device,
                 ") nor a device of its streams");
  std::lock_guard<std::mutex> lock(e.m);
  auto l = std::make_shared<detail::launch_state>();
  l->plan = e.plan;
  l->stream = &st;
  const auto& deps = l->plan->deps;
  const std::size_t n = deps.size();
  l->waiting.reset(new std::atomic<std::size_t>[n]);  // (not value-initialized: set below)
  for (std::size_t v = 0; v < n; ++v) l->waiting[v].store(deps[v], std::memory_order_relaxed);
  l->left.store(n);
  if (detail::mutation::is(detail::mutation::kind::graph_replays_once))
    l->skip_actions = e.last_stream != nullptr;
  // One launch after another, whatever the streams (GRAPH-3).
  if (e.last_stream != nullptr && e.last_stream != &st &&
      !detail::mutation::is(detail::mutation::kind::graph_launches_overlap))
    detail::enqueue_wait(st, *e.last_stream, e.last_seq);
  detail::record_events_at_launch(e, *l);
  std::optional<detail::trace::graph_scope> traced;
  if (detail::trace::enabled()) [[unlikely]] {
    l->trace_launch = detail::trace::new_launch_id();
    traced.emplace(l->trace_launch, 0, 0);  // the launch's own record
  }
  const detail::seq_t seq = detail::enqueue(st, new detail::launch_op(std::move(l)));
  st.add_ref();
  if (e.last_stream != nullptr) e.last_stream->release();
  e.last_stream = &st;
  e.last_seq = seq;
}

std::string graph_exec::how() const {
  (void)detail::checked_plan(state_.get(), "sluice::graph_exec::how");
  return "host executor";
}

update_status graph_exec::update(const graph& g) {
  constexpr const char* api = "sluice::graph_exec::update";
  const auto& plan = detail::checked_plan(state_.get(), api);
  const auto& next = detail::graph_access::program(g);
  if (!next) detail::fail(errc::invalid_handle, api, "the graph is empty (moved from)");
  detail::check_memory_alive(*plan.program, api);
  const update_status status = detail::compare_programs(*plan.program, *next);
  if (status != update_status::ok) return status;
  if (detail::mutation::is(detail::mutation::kind::graph_update_ignored)) return status;
  auto fresh = detail::make_plan(next);
  std::lock_guard<std::mutex> lock(state_->m);
  state_->plan = std::move(fresh);
  state_->memory_checked.store(0, std::memory_order_relaxed);  // another program's buffers
  state_->registrations_checked.store(0, std::memory_order_relaxed);
  return status;
}

}  // namespace sluice
