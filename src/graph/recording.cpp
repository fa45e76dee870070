// The recording model of graphs (recording.hpp).
#include "graph/recording.hpp"

#include "checks.hpp"
#include "range_map.hpp"
#include "strided.hpp"

#include <algorithm>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>

namespace sluice::detail {

struct recording {
  struct member {
    stream_key key;
    int device = 0;
    std::vector<std::size_t> frontier;  // what the member's next operation waits for
    bool recorded = false;
    std::size_t last = 0;  // its last recorded vertex
  };
  bool open = true;
  bool native_work = false;    // a member's native handle was taken (mark_native_work)
  std::string native_failure;  // why the vendor could not capture native work (note_native_failure)
  std::thread::id creator = std::this_thread::get_id();
  graph_program program;
  std::vector<member> members;  // [0] is the origin

  member* find(stream_key s) noexcept {
    for (auto& m : members)
      if (m.key == s) return &m;
    return nullptr;
  }
};

std::atomic<int> active_captures{0};

namespace {

struct key_hash {
  std::size_t operator()(stream_key k) const noexcept {
    return std::hash<const void*>()(k.id) ^ (static_cast<std::size_t>(k.generation) << 1U);
  }
};

struct model {
  std::mutex m;
  std::unordered_map<stream_key, std::shared_ptr<recording>, key_hash> streams;
  std::unordered_map<const void*, std::pair<std::weak_ptr<recording>, std::size_t>> events;
  std::atomic<int> marked_events{0};
};

model& the_model() {
  static model* m = new model();  // never destroyed: captures may end during exit
  return *m;
}

void leave_all(model& md, recording& r) {
  if (!r.open) return;
  r.open = false;
  for (const auto& m : r.members) md.streams.erase(m.key);
  active_captures.fetch_sub(1, std::memory_order_acq_rel);
}

void join(model& md, const std::shared_ptr<recording>& r, stream_key s, int device,
          std::vector<std::size_t> frontier) {
  recording::member m;
  m.key = s;
  m.device = device;
  m.frontier = std::move(frontier);
  r->members.push_back(std::move(m));
  md.streams.emplace(s, r);
}

}  // namespace

void reject_in_capture(const char* api, const char* why) {
  fail(errc::capture_violation, api, why, "; nothing was recorded and the capture stays valid");
}

void reject_outside_event_wait(const char* api) {
  reject_in_capture(api, "a capturing stream cannot wait on an event recorded outside its capture");
}

void check_memory_owned(const std::vector<used_memory>& memory, vertex_kind kind, const char* api) {
  for (const used_memory& m : memory) {
    const range_map& map = m.registered ? registrations() : allocations();
    if (map.find(m.ptr, m.bytes).owner != m.owner)
      fail(errc::invalid_handle, api, "a buffer that the graph's ", to_string(kind),
           " uses was destroyed (buffers must outlive the graph_exec); nothing was enqueued");
  }
}

void refuse_if_recorded_in_capture(const void* event, const char* api) {
  if (any_capture() && live_event_mark(event))
    reject_in_capture(api, "the event was last recorded in a capture that is still open");
}

void refuse_if_device_captures(int device, const char* api) {
  if (device_captures(device))
    reject_in_capture(api,
                      "a stream of the device captures (a graph's capture forbids "
                      "synchronizing its device, from any thread)");
}

bool record_event_wait_if_capturing(stream_key s, int s_device, const void* event, bool recorded,
                                    const char* api) {
  if (!any_capture()) return false;
  if (auto mark = live_event_mark(event)) {
    record_event_wait(s, s_device, *mark, api);
    return true;
  }
  if (capture_of(s) == nullptr) return false;
  if (recorded) reject_outside_event_wait(api);
  return true;  // never recorded: a no-op (EVT-3), in a capture as outside
}

std::shared_ptr<recording> begin_capture(stream_key origin, int device, const char* api) {
  auto& md = the_model();
  auto r = std::make_shared<recording>();
  r->program.device = device;
  std::lock_guard<std::mutex> lock(md.m);
  if (md.streams.count(origin) != 0)
    fail(errc::capture_violation, api,
         "the stream is already capturing (a capture of its own or one it joined)");
  join(md, r, origin, device, {});
  active_captures.fetch_add(1, std::memory_order_acq_rel);
  return r;
}

std::shared_ptr<recording> capture_of(stream_key s) noexcept {
  if (!any_capture()) return nullptr;
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  const auto it = md.streams.find(s);
  return it == md.streams.end() ? nullptr : it->second;
}

bool began_on_this_thread(const recording& r) noexcept {
  return r.creator == std::this_thread::get_id();
}

bool device_captures(int device) noexcept {
  if (!any_capture()) return false;
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  for (const auto& [key, r] : md.streams) {
    (void)key;
    for (const auto& m : r->members)
      if (m.device == device) return true;
  }
  return false;
}

std::vector<stream_key> members_of(const recording& r) {
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  std::vector<stream_key> keys;
  if (!r.open) return keys;
  keys.reserve(r.members.size());
  for (const auto& m : r.members) keys.push_back(m.key);
  return keys;
}

void note_native_failure(recording& r, std::string why) {
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  if (r.native_failure.empty()) r.native_failure = std::move(why);
}

void mark_native_work(stream_key s) noexcept {
  if (!any_capture()) return;
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  const auto it = md.streams.find(s);
  if (it != md.streams.end()) it->second->native_work = true;
}

std::optional<std::size_t> record_vertex(recording& r, stream_key s, vertex&& v) {
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  recording::member* m = r.open ? r.find(s) : nullptr;
  if (m == nullptr) return std::nullopt;
  v.deps = m->frontier;
  v.device = m->device;
  const std::size_t index = r.program.vertices.size();
  r.program.vertices.push_back(std::move(v));
  m->frontier.assign(1, index);
  m->recorded = true;
  m->last = index;
  return index;
}

bool record_stream_wait(stream_key s, int s_device, stream_key other, const char* api) {
  if (!any_capture()) return false;
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  const auto mine = md.streams.find(s);
  const auto theirs = md.streams.find(other);
  if (mine == md.streams.end() && theirs == md.streams.end()) return false;
  if (mine != md.streams.end()) {
    if (theirs == md.streams.end() || theirs->second != mine->second)
      reject_in_capture(
          api, "a capturing stream cannot wait on a stream that is not part of its capture");
    if (s == other) return true;
    recording& r = *mine->second;
    auto* to = r.find(s);
    const auto* from = r.find(other);
    to->frontier.insert(to->frontier.end(), from->frontier.begin(), from->frontier.end());
    return true;
  }
  // s captures nothing: it joins the capture of other at other's frontier.
  const std::shared_ptr<recording> r = theirs->second;
  join(md, r, s, s_device, r->find(other)->frontier);
  return true;
}

void record_event_wait(stream_key s, int s_device, const capture_point& p, const char* api) {
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  const auto mine = md.streams.find(s);
  if (mine == md.streams.end()) {
    if (!p.capture->open) return;  // over meanwhile: the event kept its earlier state
    join(md, p.capture, s, s_device, {p.vertex});
    return;
  }
  if (mine->second != p.capture)
    reject_in_capture(api,
                      "a capturing stream cannot wait on an event recorded in another capture");
  mine->second->find(s)->frontier.push_back(p.vertex);
}

void mark_event(const void* event, capture_point p) {
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  auto [it, fresh] = md.events.insert_or_assign(
      event, std::make_pair(std::weak_ptr<recording>(p.capture), p.vertex));
  (void)it;
  if (fresh) md.marked_events.fetch_add(1, std::memory_order_release);
}

void clear_event_mark(const void* event) noexcept {
  auto& md = the_model();
  if (md.marked_events.load(std::memory_order_acquire) == 0) return;
  std::lock_guard<std::mutex> lock(md.m);
  if (md.events.erase(event) != 0) md.marked_events.fetch_sub(1, std::memory_order_release);
}

std::optional<capture_point> live_event_mark(const void* event) {
  auto& md = the_model();
  if (md.marked_events.load(std::memory_order_acquire) == 0) return std::nullopt;
  std::lock_guard<std::mutex> lock(md.m);
  const auto it = md.events.find(event);
  if (it == md.events.end()) return std::nullopt;
  auto r = it->second.first.lock();
  if (r == nullptr || !r->open) {
    md.events.erase(it);  // its capture is over: the event has its earlier state again
    md.marked_events.fetch_sub(1, std::memory_order_release);
    return std::nullopt;
  }
  return capture_point{std::move(r), it->second.second};
}

std::shared_ptr<const graph_program> end_capture(recording& r, bool (*alive)(stream_key)) {
  constexpr const char* api = "sluice::capture::end";
  auto& md = the_model();
  std::lock_guard<std::mutex> lock(md.m);
  if (!r.open) fail(errc::invalid_handle, api, "the capture is already over");
  const std::vector<recording::member> members = r.members;
  leave_all(md, r);
  if (r.native_work)
    fail(errc::capture_violation, api,
         "a capturing stream's native handle was taken: this backend runs graphs as sluice's "
         "own replay and cannot capture native work; nothing recorded will run");
  if (!r.native_failure.empty())
    fail(errc::capture_violation, api, "native work on a capturing stream could not be captured (",
         r.native_failure, "); nothing recorded will run");
  for (const auto& m : members)
    if (!alive(m.key))
      fail(errc::capture_violation, api,
           "a stream of the capture was destroyed before end(); nothing recorded will run");
  // What the origin's next operation would wait for, transitively.
  std::vector<bool> reached(r.program.vertices.size(), false);
  std::vector<std::size_t> todo = members.front().frontier;
  while (!todo.empty()) {
    const std::size_t v = todo.back();
    todo.pop_back();
    if (reached[v]) continue;
    reached[v] = true;
    for (std::size_t d : r.program.vertices[v].deps) todo.push_back(d);
  }
  for (std::size_t i = 1; i < members.size(); ++i)
    if (members[i].recorded && !reached[members[i].last])
      fail(errc::capture_violation, api, "stream ", i,
           " that joined the capture was not joined back to its origin (the origin must wait, "
           "directly or through other members, on a point after its last recorded operation); "
           "nothing recorded will run");
  auto p = std::make_shared<graph_program>(std::move(r.program));
  reduce_edges(*p);
  return p;
}

void discard_capture(recording& r) noexcept {
  auto& md = the_model();
  std::vector<vertex> dropped;  // destroyed outside the lock: host functions' captures run code
  std::lock_guard<std::mutex> lock(md.m);
  leave_all(md, r);
  dropped.swap(r.program.vertices);
}

}  // namespace sluice::detail
