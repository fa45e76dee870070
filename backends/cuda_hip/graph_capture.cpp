// Captures on the GPU backends: the public capture, and the hooks through
// which streams, events and operations record a call instead of enqueuing
// while a capture is open (graph.hpp). The model (who captures, frontiers,
// joins, end()'s checks) is the shared one of src/graph/recording.hpp.
#include "graph.hpp"
#include "memory_state.hpp"
#include "range_map.hpp"
#include "strided.hpp"

#include <sluice/graph.hpp>

#include <string>
#include <unordered_map>

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

}  // namespace

// A vertex's signature names each memory end it touches, in order: "d<device> "
// for a device's memory, "p " for pinned host memory (sluice's or registered),
// "n " for other memory.
bool copies_on_host_thread(const vertex& v) noexcept {
  return v.kind == vertex_kind::copy && v.signature == "p p ";
}

bool record_if_capturing(stream_state& s, recorded_call&& c) {
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

bool record_event_if_capturing(stream_state& s, event_state& e) {
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
  return any_capture() && record_stream_wait(key_of(s), s.device, key_of(other), api_name);
}

bool record_event_wait_if_capturing(stream_state& s, const event_state* e, bool recorded,
                                    const char* api_name) {
  return record_event_wait_if_capturing(key_of(s), s.device, e, recorded, api_name);
}

}  // namespace detail

capture::capture(stream_ref origin) {
  constexpr const char* api_name = "sluice::capture";
  auto& s = detail::checked(origin, api_name);
  auto handle = std::make_shared<detail::capture_handle>();
  handle->rec = detail::begin_capture(detail::key_of(s), s.device, api_name);
  handle->origin = detail::key_of(s);
  state_ = std::move(handle);
}

capture::~capture() {
  if (!state_ || state_->ended.exchange(true)) return;
  detail::discard_capture(*state_->rec);
}

graph capture::end() {
  constexpr const char* api_name = "sluice::capture::end";
  if (state_->ended.exchange(true))
    detail::fail(errc::invalid_handle, api_name, "end() was already called on this capture");
  return detail::graph_access::make_graph(detail::end_capture(*state_->rec, detail::alive));
}

bool is_capturing(stream_ref s) noexcept {
  try {
    return detail::capturing(detail::checked(s, "sluice::is_capturing"));
  } catch (...) {
    return false;
  }
}

}  // namespace sluice
