// A graph_exec's vendor graph (graph_native.hpp).
#include "graph_native.hpp"

#include "enqueue_scope.hpp"

#include <algorithm>
#include <mutex>

namespace sluice::detail {

namespace {

//! Why p's calls cannot be captured as they are; null when they can.
const char* not_capturable(const graph_program& p) {
  for (const vertex& v : p.vertices) {
    if (v.device != p.device) return "its operations are on several devices";
    switch (v.kind) {
      case vertex_kind::copy:
        // A host task behind a gate whose ticket is that of the moment.
        if (copies_on_host_thread(v))
          return "it has a copy between host memory (sluice's host thread makes it)";
        break;
      case vertex_kind::fill:
      case vertex_kind::record: break;
      // Their calls enqueue with values of the moment (host functions' gate
      // tickets), on sluice's helper streams (staged peer copies) or
      // through calls a capture refuses (peer copies): each launch must make
      // them again.
      case vertex_kind::host_func: return "it has a host function";
      case vertex_kind::copy_peer:
      case vertex_kind::copy_peer_batch: return "it has a peer copy";
      case vertex_kind::write_value:
      case vertex_kind::wait_value: return "it has a flag operation";
      case vertex_kind::native:  // a child graph of the vendor's
        if (!api::captures_native_work) return "it has native work";
        break;
    }
  }
  return nullptr;
}

//! Ends the capture on `origin` whatever happened, and gives back its graph.
struct open_capture {
  stream_state& origin;
  bool open = true;
  api::graph_t graph{};
  explicit open_capture(stream_state& s) : origin(s) {
    check(api::begin_capture(s.native), "sluice::graph::instantiate: capture");
  }
  api::status end() {
    open = false;
    return api::end_capture(origin.native, &graph);
  }
  ~open_capture() {
    if (open) (void)api::end_capture(origin.native, &graph);
    if (graph != nullptr) (void)api::graph_destroy(graph);
    api::clear_last_error();
  }
  open_capture(const open_capture&) = delete;
  open_capture& operator=(const open_capture&) = delete;
};

}  // namespace

native_graph::~native_graph() {
  if (exec != nullptr) (void)api::graph_exec_destroy(exec);
}

std::unique_ptr<native_graph> build_native(const graph_program& p,
                                           const std::vector<std::size_t>& lane_of,
                                           const std::vector<char>& signals,
                                           const std::vector<sluice::stream>& lanes,
                                           std::vector<std::optional<sluice::event>>& points,
                                           const sluice::event& end, std::string* why) {
  if constexpr (!api::native_graphs) {
    *why = std::string(api::vendor) + "'s graphs are not used";
    return nullptr;
  }
  if (p.vertices.empty() || lanes.empty()) {
    *why = "it is empty";
    return nullptr;
  }
  if (const char* reason = not_capturable(p)) {
    *why = reason;
    return nullptr;
  }
  if (trace::enabled()) {
    *why = "it was instantiated while a trace was collected";
    return nullptr;
  }
  auto g = std::make_unique<native_graph>();
  try {
    stream_state& origin = *access::state(lanes[0]);
    const sluice::device dev(p.device);
    open_capture capture(origin);
    // The other lanes that start a branch join the capture at its start; the
    // rest join through the events of the vertices they wait for. No fork
    // where no other lane starts one (an event nobody waits on).
    sluice::event fork(dev);
    bool forks = false;
    for (std::size_t v = 0; v < p.vertices.size(); ++v)
      forks = forks || (lane_of[v] != 0 && p.vertices[v].deps.empty());
    if (forks) fork.record(lanes[0]);
    std::vector<char> joined(lanes.size(), 0);
    joined[0] = 1;
    for (std::size_t v = 0; v < p.vertices.size(); ++v) {
      const vertex& x = p.vertices[v];
      const std::size_t l = lane_of[v];
      const stream_ref lane = lanes[l];
      if (joined[l] == 0 && x.deps.empty()) lane.wait(fork);
      joined[l] = 1;
      for (std::size_t d : x.deps)
        if (lane_of[d] != l) lane.wait(*points[d]);
      const auto& w = static_cast<const gpu_work&>(*x.work);
      w.call({lane, nullptr, true});
      if (signals[v] != 0) points[v]->record(lane);
      if (w.event && std::find(g->records.begin(), g->records.end(), w.event) == g->records.end())
        g->records.push_back(w.event);  // once each: a launch locks each
    }
    for (std::size_t l = 1; l < lanes.size(); ++l) {
      sluice::event join(dev);
      join.record(lanes[l]);
      lanes[0].wait(join);
    }
    // The launch's end, recorded by the graph itself: no call of its own.
    g->end = access::state(end);
    check(api::event_record_external(g->end->native, origin.native),
          "sluice::graph::instantiate: the end of the capture");
    const api::status ended = capture.end();
    if (!ended.ok() || capture.graph == nullptr) {
      *why = concat("the vendor's capture failed (", ended.api, ": ", api::error_name(ended.code),
                    ")");
      return nullptr;
    }
    const api::status made = api::graph_instantiate(&g->exec, capture.graph);
    if (!made.ok()) {
      g->exec = nullptr;
      *why = concat("the vendor's instantiate failed (", api::error_name(made.code), ")");
      return nullptr;
    }
  } catch (const std::exception& e) {
    *why = concat("its capture failed (", e.what(), ")");
    return nullptr;
  }
  return g;
}

bool launch_native(const native_graph& g, stream_state& st, const char* api_name) {
  // Each record's event, alive and held for the launch (~event waits).
  std::vector<std::unique_lock<std::mutex>> held;
  held.reserve(g.records.size());
  for (const auto& link : g.records) {
    held.emplace_back(link->m);
    if (link->target == nullptr) return false;
  }
  {
    enqueue_scope<device_current> scope(st, "graph_launch");
    check(api::graph_launch(g.exec, st.native), api_name);
    scope.done();
  }
  // What enqueue_record keeps of a record, for each of the graph's.
  const std::uint32_t tickets = st.host_functions_published.load(std::memory_order_acquire);
  const auto recorded = [&](event_state& e) {
    clear_event_mark(&e);
    e.record_stream.store(&st, std::memory_order_relaxed);
    e.record_tickets.store(tickets, std::memory_order_relaxed);
    e.recorded.store(true, std::memory_order_release);
  };
  for (const auto& link : g.records) recorded(*link->target);
  recorded(*g.end);
  return true;
}

}  // namespace sluice::detail
