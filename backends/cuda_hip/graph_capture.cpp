// Captures on the GPU backends: the public capture, and the hooks through
// which streams, events and operations record a call instead of enqueuing
// while a capture is open (graph.hpp). The model (who captures, frontiers,
// joins, end()'s checks) is the shared one of src/graph/recording.hpp.
#include "enqueue_scope.hpp"
#include "graph.hpp"
#include "memory_state.hpp"
#include "range_map.hpp"
#include "strided.hpp"

#include <sluice/graph.hpp>

#include <string>
#include <unordered_map>
#include <unordered_set>

namespace sluice {

namespace detail {

namespace {

bool alive(stream_key k) noexcept {
  return static_cast<const stream_state*>(k.id)->generation.load(std::memory_order_relaxed) ==
         k.generation;
}

template <class Link, class Target>
struct links {
  std::mutex m;
  std::unordered_map<const Target*, std::shared_ptr<Link>> of;

  std::shared_ptr<Link> link(Target& t) {
    std::lock_guard<std::mutex> lock(m);
    auto& slot = of[&t];
    if (!slot) {
      slot = std::make_shared<Link>();
      slot->target = &t;
    }
    return slot;
  }
  void forget(const Target* t) noexcept {
    std::shared_ptr<Link> l;
    {
      std::lock_guard<std::mutex> lock(m);
      const auto it = of.find(t);
      if (it == of.end()) return;
      l = std::move(it->second);
      of.erase(it);
    }
    std::lock_guard<std::mutex> lock(l->m);
    l->target = nullptr;
  }
};

// Never destroyed: events and flags may die during exit.
links<event_link, event_state>& event_links() {
  static auto* l = new links<event_link, event_state>();
  return *l;
}
links<flag_link, flag_state>& flag_links() {
  static auto* l = new links<flag_link, flag_state>();
  return *l;
}

// Native work on capturing streams (api::captures_native_work). A member
// stream whose native handle was ever taken is, between two of sluice's
// operations on it, in a vendor capture of its own: the kernels the user
// gives its handle are captured there. Each of sluice's operations on it
// first ends that capture (a cut): a non-empty one becomes a native vertex,
// in stream order before the operation; the capture begins again after it.
// One lock for all streams: captures are rare and short.
struct native_segments {
  std::mutex m;
  std::unordered_set<const stream_state*> open;  // under m: in a vendor capture of native work
  std::atomic<int> count{0};                     // open.size()
};

native_segments& segments() {
  static auto* s = new native_segments();  // never destroyed: streams may die during exit
  return *s;
}

//! A native vertex's work: the vendor's graph of it, and an exec of it that
//! a replay launches (the vendor orders launches of one exec).
struct native_run {
  api::graph_t graph{};
  api::graph_exec_t exec{};
  native_run() = default;
  native_run(const native_run&) = delete;
  native_run& operator=(const native_run&) = delete;
  ~native_run() {
    if (exec != nullptr) (void)api::graph_exec_destroy(exec);
    if (graph != nullptr) (void)api::graph_destroy(graph);
  }
};

std::string failure_of(const api::status& st) {
  return concat(st.api, ": ", api::error_name(st.code));
}

//! Under segments().m: s's vendor capture of native work begins (r: the
//! capture s belongs to, told when the vendor refuses).
void begin_segment(recording& r, stream_state& s) {
  auto& g = segments();
  if (g.open.count(&s) != 0) return;
  const api::status begun = api::begin_capture(s.native);
  if (!begun.ok()) {
    api::clear_last_error();
    note_native_failure(r, failure_of(begun));
    return;
  }
  g.open.insert(&s);
  g.count.fetch_add(1, std::memory_order_relaxed);
}

//! A native vertex of the captured run's graph: a replay launches it on its
//! lane; an exec's vendor graph holds it as a child graph.
replay_call native_call(std::shared_ptr<native_run> run) {
  return [run = std::move(run)](const replay_site& at) {
    constexpr const char* api_name = "sluice::graph_exec::launch";
    stream_state& lane = *access::state(at.lane);
    if (at.native_build) {
      check(api::capture_add_graph(lane.native, run->graph), api_name, ": native work");
      return;
    }
    enqueue_scope<device_current> scope(lane, "native");
    check(api::graph_launch(run->exec, lane.native), api_name, ": native work");
    scope.done();
  };
}

//! Under segments().m: ends s's vendor capture of native work, if open; what
//! it captured becomes a native vertex of r (none when r is null: the
//! capture is discarded or s destroyed).
void cut_segment(recording* r, stream_state& s) noexcept {
  auto& g = segments();
  if (g.open.erase(&s) == 0) return;
  g.count.fetch_sub(1, std::memory_order_relaxed);
  auto run = std::make_shared<native_run>();
  const api::status ended = api::end_capture(s.native, &run->graph);
  std::size_t nodes = 0;
  api::status failed = ended;
  if (ended.ok() && run->graph != nullptr) {
    failed = api::graph_node_count(run->graph, &nodes);
    if (failed.ok() && nodes > 0 && r != nullptr)
      failed = api::graph_instantiate(&run->exec, run->graph);
  }
  if (!failed.ok()) {
    api::clear_last_error();
    if (r != nullptr) note_native_failure(*r, failure_of(failed));
    return;
  }
  if (nodes == 0 || r == nullptr) return;
  try {
    vertex v;
    v.kind = vertex_kind::native;
    v.stream = s.trace.id;
    auto work = std::make_shared<gpu_work>();
    work->call = native_call(std::move(run));
    v.work = std::move(work);
    (void)record_vertex(*r, key_of(s), std::move(v));
  } catch (const std::bad_alloc&) {
    note_native_failure(*r, "no memory to record it");
  }
}

//! Whether s's native work may need a cut: the vendor captures native work
//! and s's handle was ever taken. One relaxed load.
bool may_hold_native_work(const stream_state& s) noexcept {
  return api::captures_native_work && s.native_escaped.load(std::memory_order_relaxed);
}

//! Runs `record` (one of sluice's operations on s, or a wait of s on
//! `other`) after s's (and other's) native work so far is recorded, and
//! opens their vendor captures of native work again after it while they
//! capture.
template <class F>
auto around_native_work(stream_state& s, stream_state* other, F&& record) -> decltype(record()) {
  const bool mine = may_hold_native_work(s),
             theirs = other != nullptr && may_hold_native_work(*other);
  if (!mine && !theirs) return record();
  std::lock_guard<std::mutex> lock(segments().m);
  const auto cut = [](stream_state& t) {
    if (auto r = capture_of(key_of(t))) cut_segment(r.get(), t);
  };
  if (mine) cut(s);
  if (theirs) cut(*other);
  struct reopen {
    stream_state* a;
    stream_state* b;
    ~reopen() {
      for (stream_state* t : {a, b})
        if (t != nullptr)
          if (auto r = capture_of(key_of(*t))) begin_segment(*r, *t);
    }
  } after{mine ? &s : nullptr, theirs ? other : nullptr};
  return record();
}

//! Under segments().m: the vendor captures of native work of r's streams
//! end, what they captured recorded into r (`keep`) or dropped.
void end_native_captures(recording& r, bool keep) noexcept {
  if (segments().count.load(std::memory_order_relaxed) == 0) return;
  try {
    for (const stream_key k : members_of(r))
      if (alive(k))
        cut_segment(keep ? &r : nullptr, *static_cast<stream_state*>(const_cast<void*>(k.id)));
  } catch (const std::bad_alloc&) {
    // members_of's copy: nothing cut; ~stream ends each one's capture.
  }
}

}  // namespace

void refuse_foreign_capture(stream_state& s, const char* api_name) {
  bool vendor_captures = false;
  if (!api::stream_is_capturing(s.native, &vendor_captures).ok()) {
    api::clear_last_error();  // an answer the vendor cannot give refuses nothing
    return;
  }
  if (!vendor_captures) return;
  if (segments().count.load(std::memory_order_relaxed) != 0) {
    std::lock_guard<std::mutex> lock(segments().m);
    if (segments().open.count(&s) != 0) return;  // sluice's own capture of its native work
  }
  fail(errc::capture_violation, api_name,
       "the borrowed stream's native stream is being captured outside sluice (its owner's own "
       "capture): a sluice operation there would join that capture unseen or spoil it; nothing "
       "was enqueued");
}

void open_native_capture(stream_state& s) {
  if constexpr (!api::captures_native_work) {
    mark_native_work(key_of(s));
  } else {
    std::lock_guard<std::mutex> lock(segments().m);
    if (auto r = capture_of(key_of(s))) begin_segment(*r, s);
  }
}

void end_native_capture(stream_state& s) noexcept {
  if (segments().count.load(std::memory_order_relaxed) == 0) return;
  std::lock_guard<std::mutex> lock(segments().m);
  cut_segment(nullptr, s);
}

// A vertex's signature names each memory end it touches, in order: "d<device> "
// for a device's memory, "p " for pinned host memory (sluice's or registered),
// "n " for other memory.
bool copies_on_host_thread(const vertex& v) noexcept {
  return v.kind == vertex_kind::copy && v.signature == "p p ";
}

namespace {

bool record_call(stream_state& s, recorded_call&& c) {
  const auto r = capture_of(key_of(s));
  if (r == nullptr) return false;
  vertex v;
  v.kind = c.kind;
  v.stream = s.trace.id;
  v.bytes = c.bytes;
  if (c.path != nullptr) v.path = c.path;
  auto work = std::make_shared<gpu_work>();
  // update() needs each end's memory kind equal (which device, pinned, other
  // memory): that fixes the direction too.
  for (const auto& [p, n] : c.memory) {
    if (const void* owner = allocations().find(p, n).owner) {
      work->memory.push_back({p, n, owner, false});
      const int d = allocation_device(static_cast<const allocation*>(owner));
      v.signature += d >= 0 ? "d" + std::to_string(d) + " " : "p ";
    } else if (const void* reg = registrations().find(p, n).owner) {
      work->memory.push_back({p, n, reg, true});
      v.signature += "p ";
    } else {
      v.signature += "n ";
    }
  }
  if (c.flag != nullptr) work->flag = flag_links().link(*c.flag);
  work->call = std::move(c.call);
  v.work = std::move(work);
  return record_vertex(*r, key_of(s), std::move(v)).has_value();
}

bool record_event(stream_state& s, event_state& e) {
  const auto r = capture_of(key_of(s));
  if (r == nullptr) return false;
  vertex v;
  v.kind = vertex_kind::record;
  v.stream = s.trace.id;
  auto work = std::make_shared<gpu_work>();
  work->event = event_links().link(e);
  work->call = [link = work->event](const replay_site& at) {
    constexpr const char* api_name = "sluice::graph_exec::launch";
    std::lock_guard<std::mutex> lock(link->m);  // ~event waits for the record's enqueue
    if (link->target == nullptr) {
      if (at.native_build) fail(errc::invalid_handle, api_name, "a recorded event was destroyed");
      return;
    }
    stream_state& lane = *access::state(at.lane);
    if (at.native_build) {
      // A node of the vendor graph; what a record also keeps (the stream it
      // was last recorded on) is set by each launch (graph_native.cpp).
      check(api::event_record_external(link->target->native, lane.native), api_name,
            ": event of device ", link->target->device);
      return;
    }
    enqueue_record(*link->target, lane, api_name);
  };
  v.work = std::move(work);
  const auto index = record_vertex(*r, key_of(s), std::move(v));
  if (!index) return false;
  mark_event(&e, capture_point{r, *index});
  return true;
}

}  // namespace

bool record_if_capturing(stream_state& s, recorded_call&& c) {
  return around_native_work(s, nullptr, [&] { return record_call(s, std::move(c)); });
}

bool record_event_if_capturing(stream_state& s, event_state& e) {
  return around_native_work(s, nullptr, [&] { return record_event(s, e); });
}

void forget_event(event_state* e) noexcept {
  clear_event_mark(e);
  event_links().forget(e);
}

void forget_flag(flag_state* f) noexcept { flag_links().forget(f); }

void check_program_alive(const graph_program& p, const char* api_name) {
  for (const vertex& v : p.vertices) {
    if (!v.work) continue;
    const auto& w = static_cast<const gpu_work&>(*v.work);
    check_memory_owned(w.memory, v.kind, api_name);
    if (w.flag) {
      std::lock_guard<std::mutex> lock(w.flag->m);
      if (w.flag->target == nullptr)
        fail(errc::invalid_handle, api_name, "a flag that the graph's ", to_string(v.kind),
             " uses was destroyed (flags must outlive the graph_exec); nothing was enqueued");
    }
  }
}

void refuse_if_capturing(const stream_state& s, const char* api_name, const char* why) {
  if (capturing(s)) reject_in_capture(api_name, why);
}

bool record_stream_wait_if_capturing(stream_state& s, stream_state& other, const char* api_name) {
  if (!any_capture()) return false;
  return around_native_work(
      s, &other, [&] { return record_stream_wait(key_of(s), s.device, key_of(other), api_name); });
}

bool record_event_wait_if_capturing(stream_state& s, const event_state* e, bool recorded,
                                    const char* api_name) {
  if (!any_capture()) return false;
  return around_native_work(s, nullptr, [&] {
    return record_event_wait_if_capturing(key_of(s), s.device, e, recorded, api_name);
  });
}

}  // namespace detail

capture::capture(stream_ref origin) {
  constexpr const char* api_name = "sluice::capture";
  auto& s = detail::checked(origin, api_name);
  auto handle = std::make_shared<detail::capture_handle>();
  handle->rec = detail::begin_capture(detail::key_of(s), s.device, api_name);
  handle->origin = detail::key_of(s);
  state_ = std::move(handle);
  if (detail::may_hold_native_work(s)) detail::open_native_capture(s);
}

capture::~capture() {
  if (!state_ || state_->ended.exchange(true)) return;
  std::lock_guard<std::mutex> lock(detail::segments().m);
  detail::end_native_captures(*state_->rec, false);
  detail::discard_capture(*state_->rec);
}

graph capture::end() {
  constexpr const char* api_name = "sluice::capture::end";
  if (state_->ended.exchange(true))
    detail::fail(errc::invalid_handle, api_name, "end() was already called on this capture");
  std::lock_guard<std::mutex> lock(detail::segments().m);
  detail::end_native_captures(*state_->rec, true);
  return detail::graph_access::make_graph(detail::end_capture(*state_->rec, detail::alive));
}

bool is_capturing(stream_ref s) noexcept {
  try {
    return detail::capturing(detail::checked_handle(s, "sluice::is_capturing"));
  } catch (...) {
    return false;
  }
}

}  // namespace sluice
