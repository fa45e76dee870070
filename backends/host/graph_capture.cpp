// Captures on the host backend: the public capture, and the hooks through
// which streams, events and enqueue() record instead of run while a capture
// is open. The model (who captures, frontiers, joins, end()'s checks) is the
// shared one of src/graph/recording.hpp.
#include "graph.hpp"
#include "mutation.hpp"
#include "range_map.hpp"
#include "strided.hpp"

#include <cstring>
#include <unordered_map>

namespace sluice {

namespace detail {

namespace {

bool alive(stream_key k) noexcept {
  return static_cast<const stream_state*>(k.id)->generation.load(std::memory_order_relaxed) ==
         k.generation;
}

vertex_kind kind_of(const char* trace_kind) noexcept {
  static constexpr struct {
    const char* name;
    vertex_kind kind;
  } kinds[] = {{"copy", vertex_kind::copy},
               {"fill", vertex_kind::fill},
               {"copy_peer", vertex_kind::copy_peer},
               {"copy_peer_batch", vertex_kind::copy_peer_batch},
               {"host_func", vertex_kind::host_func},
               {"write_value", vertex_kind::write_value},
               {"wait_value", vertex_kind::wait_value}};
  for (const auto& k : kinds)
    if (std::strcmp(k.name, trace_kind) == 0) return k.kind;
  return vertex_kind::native;
}

struct links {
  std::mutex m;
  std::unordered_map<const event_state*, std::shared_ptr<event_link>> of;
};

links& event_links() {
  static links* l = new links();  // never destroyed: events may die during exit
  return *l;
}

std::shared_ptr<event_link> link_of(event_state& e) {
  auto& l = event_links();
  std::lock_guard<std::mutex> lock(l.m);
  auto& slot = l.of[&e];
  if (!slot) {
    slot = std::make_shared<event_link>();
    slot->target = &e;
    slot->timing = e.options.timing;
  }
  return slot;
}

}  // namespace

bool record_if_capturing(stream_state& s, op*& o) {
  const auto r = capture_of(key_of(s));
  if (r == nullptr) return false;
  if (mutation::is(mutation::kind::graph_other_threads_run) && !began_on_this_thread(*r))
    return false;
  std::unique_ptr<op> owned(o);
  trace::record described;
  owned->describe(described);
  // A trace_range's markers mark time on a stream; a graph has no such place.
  if (std::strcmp(described.kind, "range_begin") == 0 ||
      std::strcmp(described.kind, "range_end") == 0)
    return true;
  vertex v;
  v.kind = kind_of(described.kind);
  v.stream = s.trace_id;
  v.bytes = described.bytes;
  if (described.path != nullptr) v.path = described.path;
  auto work = std::make_shared<host_work>();
  host_work& w = *work;
  op::memory_ranges used;
  owned->ranges(used);
  // update() needs each end's memory kind equal (device and which, pinned,
  // other host memory): that fixes the direction too.
  for (const auto& [p, n] : used) {
    const void* owner = allocations().find(p, n).owner;
    if (owner == nullptr) {
      // Registered host memory must outlive the exec as a buffer must.
      if (const void* reg = registrations().find(p, n).owner) w.memory.push_back({p, n, reg, true});
      v.signature += "h ";
      continue;
    }
    w.memory.push_back({p, n, owner});
    const auto* a = static_cast<const allocation*>(owner);
    v.signature += a->kind == memory_kind::device ? "d" + std::to_string(a->device) + " " : "p ";
  }
  w.task = take_host_task(*owned);
  if (w.task)
    owned.reset();
  else
    w.action = std::move(owned);
  v.work = std::move(work);
  if (record_vertex(*r, key_of(s), std::move(v))) return true;
  // The capture ended meanwhile: the operation runs as usual.
  o = w.task ? make_host_function_op(std::move(w.task)) : w.action.release();
  return false;
}

bool record_event_if_capturing(stream_state& s, event_state& e) {
  if (!any_capture()) return false;
  const auto r = capture_of(key_of(s));
  if (r == nullptr) return false;
  vertex v;
  v.kind = vertex_kind::record;
  v.stream = s.trace_id;
  auto work = std::make_shared<host_work>();
  work->event = link_of(e);
  v.work = std::move(work);
  const auto index = record_vertex(*r, key_of(s), std::move(v));
  if (!index) return false;
  mark_event(&e, capture_point{r, *index});
  return true;
}

void forget_event(event_state* e) noexcept {
  clear_event_mark(e);
  auto& l = event_links();
  std::shared_ptr<event_link> link;
  {
    std::lock_guard<std::mutex> lock(l.m);
    const auto it = l.of.find(e);
    if (it == l.of.end()) return;
    link = std::move(it->second);
    l.of.erase(it);
  }
  std::lock_guard<std::mutex> lock(link->m);
  link->target = nullptr;
}

void check_memory_alive(const graph_program& p, const char* api) {
  for (const vertex& v : p.vertices) {
    if (!v.work) continue;
    check_memory_owned(static_cast<const host_work&>(*v.work).memory, v.kind, api);
  }
}

void refuse_if_capturing(const stream_state& s, const char* api, const char* why) {
  if (any_capture() && capture_of(key_of(s)) != nullptr) reject_in_capture(api, why);
}

bool record_stream_wait_if_capturing(stream_state& s, stream_state& other, const char* api) {
  return record_stream_wait(key_of(s), s.dev->id, key_of(other), api);
}

bool record_event_wait_if_capturing(stream_state& s, const event_state* e, bool recorded,
                                    const char* api) {
  return record_event_wait_if_capturing(key_of(s), s.dev->id, e, recorded, api);
}

}  // namespace detail

capture::capture(stream_ref origin) {
  constexpr const char* api = "sluice::capture";
  auto& s = detail::checked(origin, api);
  if (detail::mutation::is(detail::mutation::kind::graph_first_capture_fails)) {
    static std::atomic<std::uint64_t> captured_devices{0};
    const std::uint64_t bit = std::uint64_t{1} << (static_cast<unsigned>(s.dev->id) % 64U);
    if ((captured_devices.fetch_or(bit) & bit) == 0)
      detail::fail(errc::backend_failure, api, "the first capture on device ", s.dev->id,
                   " failed (test-only mutation)");
  }
  auto handle = std::make_shared<detail::capture_handle>();
  handle->rec = detail::begin_capture(detail::key_of(s), s.dev->id, api);
  handle->origin = detail::key_of(s);
  state_ = std::move(handle);
}

capture::~capture() {
  if (!state_ || state_->ended.exchange(true)) return;
  if (detail::mutation::is(detail::mutation::kind::graph_discard_runs)) {
    try {
      const auto origin = static_cast<const detail::stream_state*>(state_->origin.id);
      auto program = detail::end_capture(*state_->rec, detail::alive);
      detail::graph_access::make_graph(std::move(program))
          .instantiate()
          .launch(detail::access::make_ref(const_cast<detail::stream_state*>(origin),
                                           state_->origin.generation));
    } catch (...) {
    }
    return;
  }
  detail::discard_capture(*state_->rec);
}

graph capture::end() {
  constexpr const char* api = "sluice::capture::end";
  if (state_->ended.exchange(true))
    detail::fail(errc::invalid_handle, api, "end() was already called on this capture");
  return detail::graph_access::make_graph(detail::end_capture(*state_->rec, detail::alive));
}

bool is_capturing(stream_ref s) noexcept {
  try {
    auto& st = detail::checked(s, "sluice::is_capturing");
    return detail::capture_of(detail::key_of(st)) != nullptr;
  } catch (...) {
    return false;
  }
}

}  // namespace sluice
