// The GPU backends' graph executor: sluice's own replay (graph.hpp). An exec
// lays its program out on lanes once: a vertex goes on the lane of a
// dependency that ended there, else on a new lane of its device, so a chain
// is one lane and independent branches are different lanes (GRAPH-15). A
// launch, under the exec's lock (launches in call order, GRAPH-3):
//   the launch stream waits for the exec's previous launch;
//   every lane that starts a branch waits for the launch stream's earlier work;
//   each vertex, in recording order, waits for its dependencies on other lanes
//   (an event each records after its call) and makes its call on its lane;
//   the launch stream waits for every lane, and records the launch's end.
// Host functions run through the lanes' own host-function path, on sluice's
// host threads; while one runs it counts as a host function of the launch
// stream, which reports its exception (GRAPH-6).
#include "graph.hpp"
#include "graph_native.hpp"
#include "host_functions.hpp"
#include "range_map.hpp"
#include "strided.hpp"
#include "trace/gpu_trace.hpp"

#include <sluice/event.hpp>
#include <sluice/graph.hpp>

#include <algorithm>
#include <map>
#include <optional>

namespace sluice {

namespace detail {

//! A program and its layout on lanes.
struct exec_plan {
  std::shared_ptr<const graph_program> program;
  std::vector<std::size_t> lane_of;  // per vertex
  std::vector<int> lane_device;      // per lane
  std::vector<char> starts;          // per lane: it holds a root (waits for the launch stream)
  std::vector<char> signals;         // per vertex: a dependant on another lane waits for it
  std::vector<int> devices;          // the graph's device and its streams', once each
  bool has_flags = false;            // a vertex uses a flag (checked at every launch)
};

struct exec_state {
  std::mutex m;  // launches in call order; update()
  std::shared_ptr<const exec_plan> plan;
  std::vector<sluice::stream> lanes;
  std::vector<std::optional<sluice::event>> points;  // per vertex that signals
  std::map<int, sluice::event> ends;                 // per launch device: a launch's end
  int last_device = -1;                              // the previous launch's end, or none
  // The vendor graph of the plan (graph_native.hpp), or null and why not.
  std::unique_ptr<native_graph> native;
  std::string why_not_native;
  bool last_native = false;  // the previous launch was the vendor graph's
  // update() made `native` again: the vendor orders launches of one vendor
  // graph, not of the one it replaced, so its first launch waits for them.
  bool native_remade = false;
  // The allocation maps' generations at which every buffer was last found alive.
  std::uint64_t checked_allocations = 0, checked_registrations = 0;
};

namespace {

std::shared_ptr<const exec_plan> make_plan(std::shared_ptr<const graph_program> p) {
  auto plan = std::make_shared<exec_plan>();
  const std::size_t n = p->vertices.size();
  plan->lane_of.resize(n);
  plan->signals.assign(n, 0);
  plan->devices.push_back(p->device);
  std::vector<std::size_t> tail;  // per lane: its last vertex so far
  for (std::size_t v = 0; v < n; ++v) {
    const vertex& x = p->vertices[v];
    std::optional<std::size_t> lane;
    for (std::size_t d : x.deps) {
      const std::size_t l = plan->lane_of[d];
      if (tail[l] == d && plan->lane_device[l] == x.device) {
        lane = l;
        break;
      }
    }
    if (!lane) {
      lane = tail.size();
      tail.push_back(v);
      plan->lane_device.push_back(x.device);
      plan->starts.push_back(x.deps.empty() ? 1 : 0);
    } else if (x.deps.empty()) {
      plan->starts[*lane] = 1;
    }
    plan->lane_of[v] = *lane;
    tail[*lane] = v;
    for (std::size_t d : x.deps)
      if (plan->lane_of[d] != *lane) plan->signals[d] = 1;
    if (std::find(plan->devices.begin(), plan->devices.end(), x.device) == plan->devices.end())
      plan->devices.push_back(x.device);
    plan->has_flags = plan->has_flags || (x.work && static_cast<const gpu_work&>(*x.work).flag);
  }
  plan->program = std::move(p);
  return plan;
}

const exec_plan& checked_plan(const exec_state* e, const char* api_name) {
  if (e == nullptr) fail(errc::invalid_handle, api_name, "the graph_exec is empty (moved from)");
  return *e->plan;
}

//! The exec's end event on `device`, which a launch records last (made on first use).
sluice::event& end_event(exec_state& e, int device) {
  auto end = e.ends.find(device);
  if (end == e.ends.end())
    end = e.ends.emplace(device, sluice::event(sluice::device(device))).first;
  return end->second;
}

void check_alive(exec_state& e, const graph_program& p, const char* api_name) {
  const std::uint64_t a = allocations().generation(), r = registrations().generation();
  if (a == e.checked_allocations && r == e.checked_registrations && !e.plan->has_flags) return;
  check_program_alive(p, api_name);
  e.checked_allocations = a;
  e.checked_registrations = r;
}

}  // namespace

bool record_host_task_if_capturing(stream_state& s, std::unique_ptr<host_task>& task) {
  recorded_call c;
  c.kind = vertex_kind::host_func;
  std::shared_ptr<host_task> fn(task.release());
  c.call = [fn](const replay_site& at) {
    stream_state* launch = at.launch;
    // Counts as the launch stream's next host function: synchronizing that
    // stream from it is a self-wait (HOST-3); its earlier events are not.
    const std::uint32_t ticket =
        launch->host_functions_published.load(std::memory_order_acquire) + 1;
    launch->add_ref();
    const std::shared_ptr<stream_state> held(launch, [](stream_state* l) { l->release(); });
    auto run = make_host_task([fn, held, ticket] {
      const auto before = exchange_host_function_stream(held.get(), ticket);
      std::optional<std::string> failure = run_host_task(*fn);
      (void)exchange_host_function_stream(before.first, before.second);
      if (failure) held->failures.add(errc::host_function_failed, std::move(*failure));
    });
    stream_state& lane = *access::state(at.lane);
    if (trace::enabled()) [[unlikely]]
      run = traced_host_task(lane, std::move(run));
    enqueue_host(lane, std::move(run), "sluice::graph_exec::launch");
  };
  if (record_if_capturing(s, std::move(c))) return true;
  // The capture ended meanwhile: the task runs as usual, as given.
  struct shared_task final : host_task {
    explicit shared_task(std::shared_ptr<host_task> f) : t(std::move(f)) {}
    void run() override { t->run(); }
    std::shared_ptr<host_task> t;
  };
  task = std::make_unique<shared_task>(std::move(fn));
  return false;
}

}  // namespace detail

graph_exec graph::instantiate() const {
  constexpr const char* api_name = "sluice::graph::instantiate";
  if (!program_) detail::fail(errc::invalid_handle, api_name, "the graph is empty (moved from)");
  auto e = std::make_shared<detail::exec_state>();
  e->plan = detail::make_plan(program_);
  const auto& plan = *e->plan;
  for (int d : plan.lane_device)
    e->lanes.emplace_back(sluice::device(d),
                          sluice::stream_options{priority::normal, std::nullopt, "graph lane"});
  e->points.resize(plan.signals.size());
  for (std::size_t v = 0; v < plan.signals.size(); ++v)
    if (plan.signals[v] != 0)
      e->points[v].emplace(sluice::device(plan.lane_device[plan.lane_of[v]]));
  e->native = detail::build_native(*plan.program, plan.lane_of, plan.signals, e->lanes, e->points,
                                   detail::end_event(*e, plan.program->device), &e->why_not_native);
  return detail::graph_access::make_exec(std::move(e));
}

void graph_exec::launch(stream_ref s) const {
  constexpr const char* api_name = "sluice::graph_exec::launch";
  (void)detail::checked_plan(state_.get(), api_name);
  auto& st = detail::checked(s, api_name);
  detail::refuse_if_capturing(st, api_name, "a graph cannot be launched onto a capturing stream");
  auto& e = *state_;
  std::lock_guard<std::mutex> lock(e.m);
  const auto plan = e.plan;
  const auto& p = *plan->program;
  if (std::find(plan->devices.begin(), plan->devices.end(), st.device) == plan->devices.end())
    detail::fail(errc::invalid_argument, api_name, "the stream belongs to device ", st.device,
                 ", which is neither the graph's device (", p.device,
                 ") nor a device of its streams");
  detail::check_alive(e, p, api_name);
  // While tracing, what the launch enqueues is the launch's (its joins on the
  // lanes' tracks), each vertex's operations on the track of the stream it
  // was captured from.
  std::optional<detail::trace::graph_scope> traced;
  const std::uint64_t trace_launch = detail::trace::enabled() ? detail::trace::new_launch_id() : 0;
  if (trace_launch != 0) [[unlikely]]
    traced.emplace(trace_launch, 0, 0);
  if (e.native && trace_launch == 0) {
    // The vendor orders launches of its graph (GRAPH-3); after a replay the
    // launch waits for it.
    if ((!e.last_native || e.native_remade) && e.last_device >= 0) s.wait(e.ends.at(e.last_device));
    if (detail::launch_native(*e.native, st, api_name)) {
      e.native_remade = false;
      e.last_device = e.native->end->device;  // the graph recorded e.ends there
      e.last_native = true;
      return;
    }
    e.native.reset();  // an event it records is gone: from now on the replay's
    e.why_not_native = "an event that it records was destroyed";
  }
  sluice::event& end = detail::end_event(e, st.device);
  // One launch after another, whatever the streams (GRAPH-3).
  if (e.last_device >= 0) s.wait(e.ends.at(e.last_device));
  for (std::size_t l = 0; l < e.lanes.size(); ++l)
    if (plan->starts[l] != 0)
      detail::wait_for_stream(*detail::access::state(e.lanes[l]), st, api_name);
  for (std::size_t v = 0; v < p.vertices.size(); ++v) {
    const detail::vertex& x = p.vertices[v];
    const stream_ref lane = e.lanes[plan->lane_of[v]];
    for (std::size_t d : x.deps)
      if (plan->lane_of[d] != plan->lane_of[v]) lane.wait(*e.points[d]);
    {
      std::optional<detail::trace::graph_scope> vertex_traced;
      if (trace_launch != 0) [[unlikely]]
        vertex_traced.emplace(trace_launch, static_cast<std::uint32_t>(v + 1), x.stream);
      static_cast<const detail::gpu_work&>(*x.work).call({lane, &st});
    }
    if (plan->signals[v] != 0) e.points[v]->record(lane);
  }
  for (const sluice::stream& lane : e.lanes)
    detail::wait_for_stream(st, *detail::access::state(lane), api_name);
  if (trace_launch != 0) [[unlikely]] {
    // The launch on its stream's track: an instant where its last lane joined.
    detail::traced_op launched(st, "graph_launch", 0, true);
    launched.done();
  }
  // The exec's own record (not event::record): only the next launch waits on
  // it, so a single launch leaves it unused, which is no mistake of the user's.
  detail::enqueue_record(*detail::access::state(end), st, api_name);
  e.last_device = st.device;
  e.last_native = false;
}

std::string graph_exec::how() const {
  (void)detail::checked_plan(state_.get(), "sluice::graph_exec::how");
  auto& e = *state_;
  std::lock_guard<std::mutex> lock(e.m);
  return e.native ? "native" : "replay: " + e.why_not_native;
}

update_status graph_exec::update(const graph& g) {
  constexpr const char* api_name = "sluice::graph_exec::update";
  const auto& plan = detail::checked_plan(state_.get(), api_name);
  const auto& next = detail::graph_access::program(g);
  if (!next) detail::fail(errc::invalid_handle, api_name, "the graph is empty (moved from)");
  detail::check_program_alive(*plan.program, api_name);
  const update_status status = detail::compare_programs(*plan.program, *next);
  if (status != update_status::ok) return status;
  // The same shape: the same layout on the same lanes, with next's calls.
  auto fresh = std::make_shared<detail::exec_plan>(plan);
  fresh->program = next;
  std::lock_guard<std::mutex> lock(state_->m);
  auto& e = *state_;
  // The vendor graph holds the old calls' arguments: made again (a launch of
  // the old one still in flight completes; the vendor frees it after).
  e.native = detail::build_native(*next, fresh->lane_of, fresh->signals, e.lanes, e.points,
                                  detail::end_event(e, next->device), &e.why_not_native);
  e.native_remade = e.native != nullptr;
  e.plan = std::move(fresh);
  e.checked_allocations = e.checked_registrations = 0;
  return status;
}

}  // namespace sluice
