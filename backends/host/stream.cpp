// Streams of the host backend: handles, synchronization, waits, flags ops.
#include "backend_rules.hpp"
#include "chaos.hpp"
#include "graph.hpp"
#include "host.hpp"
#include "host_functions.hpp"
#include "mutation.hpp"
#include "priority.hpp"
#include "stream_names.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/native.hpp>

namespace sluice {

namespace detail {

stream_state& checked(const stream_state* s, std::uint32_t generation, const char* api) {
  if (s == nullptr) fail(errc::invalid_handle, api, "the stream is empty (moved from)");
  if (s->generation.load(std::memory_order_relaxed) != generation)
    fail(errc::invalid_handle, api, "the stream was destroyed (a stream_ref outlived its stream)");
  if (s->alias != nullptr) [[unlikely]] {
    // A borrowed stream: the stream whose queue it uses, while that lives.
    if (s->alias->generation.load(std::memory_order_relaxed) != s->alias_generation)
      fail(errc::invalid_handle, api,
           "the native stream of this borrowed stream was destroyed (it must outlive the "
           "borrowed stream)");
    return *s->alias;
  }
  return *const_cast<stream_state*>(s);
}

namespace {

//! Holds the stream until another stream reaches a position (wait(event), wait(stream)).
struct wait_position_op final : op {
  wait_position_op(stream_state* o, seq_t q) : other(o), target(q) { other->add_ref(); }
  void describe(trace::record& r) const override {
    r.kind = "wait";
    r.from_stream = other->trace_id;
    r.from_seq = target;
  }
  ~wait_position_op() override { other->release(); }
  step run(stream_state& s) override {
    return when_reached(*other, target, &s) ? step::parked : step::done;
  }
  stream_state* other;
  seq_t target;
};

//! Class-wide operator new and delete for a small op made and retired at a
//! high rate on different threads (flag ops: enqueued by the caller, retired
//! by whichever thread runs the stream, for sluice::comm the engine thread):
//! freed ones go to a list that any thread pushes to (a CAS) and a thread
//! that needs one takes whole (an exchange) into its own cache, so neither
//! side takes a lock or meets malloc's cross-thread path. The memory is kept
//! for later ops, never returned: the pool holds as many as were in flight
//! at once.
template <class T>
struct pooled {
  struct node {
    node* next;
  };
  static std::atomic<node*>& returned() noexcept {
    static std::atomic<node*> head{nullptr};  // trivially destroyed: usable by late thread exits
    return head;
  }
  static void push(node* first, node* last) noexcept {
    auto& head = returned();
    node* h = head.load(std::memory_order_relaxed);
    do {
      last->next = h;
    } while (!head.compare_exchange_weak(h, first, std::memory_order_release,
                                         std::memory_order_relaxed));
  }
  struct cache {
    node* head = nullptr;
    ~cache() {
      if (head == nullptr) return;
      node* last = head;
      while (last->next != nullptr) last = last->next;
      push(head, last);
    }
  };
  static cache& local() noexcept {
    static thread_local cache c;
    return c;
  }
  static void* operator new(std::size_t bytes) {
    static_assert(sizeof(T) >= sizeof(node), "a pooled op holds a list link");
    if (bytes != sizeof(T)) return ::operator new(bytes);  // not T itself
    cache& c = local();
    if (c.head == nullptr) c.head = returned().exchange(nullptr, std::memory_order_acquire);
    if (c.head == nullptr) return ::operator new(sizeof(T));
    node* n = c.head;
    c.head = n->next;
    return n;
  }
  static void operator delete(void* p, std::size_t bytes) noexcept {
    if (p == nullptr) return;
    if (bytes != sizeof(T)) {
      ::operator delete(p);
      return;
    }
    auto* n = static_cast<node*>(p);
    push(n, n);
  }
};

struct wait_flag_op final : op, pooled<wait_flag_op> {
  wait_flag_op(flag_state* f, std::uint32_t v) : flag(f), value(v) { flag->add_ref(); }
  void describe(trace::record& r) const override { r.kind = "wait_value"; }
  ~wait_flag_op() override { flag->release(); }
  step run(stream_state& s) override {
    return flag->wait_for(value, &s) ? step::parked : step::done;
  }
  bool runs_inline() const noexcept override { return true; }
  flag_state* flag;
  std::uint32_t value;
};

struct write_flag_op final : op, pooled<write_flag_op> {
  write_flag_op(flag_state* f, std::uint32_t v) : flag(f), value(v) { flag->add_ref(); }
  void describe(trace::record& r) const override { r.kind = "write_value"; }
  ~write_flag_op() override { flag->release(); }
  step run(stream_state&) override {
    flag->store(value);
    return step::done;
  }
  bool runs_inline() const noexcept override { return true; }
  flag_state* flag;
  std::uint32_t value;
};

//! A trace_range's begin or end: completes at once, timed like any operation.
struct marker_op final : op {
  marker_op(bool b, std::string n, std::uint64_t id) : begin(b), name(std::move(n)), range(id) {}
  void describe(trace::record& r) const override {
    r.kind = begin ? "range_begin" : "range_end";
    r.label = name;
    r.range = range;
  }
  step run(stream_state&) override { return step::done; }
  bool begin;
  std::string name;
  std::uint64_t range;
};

}  // namespace

bool trace_supported() noexcept { return true; }

// Host operations are timed by the host clock where a worker runs them: one
// trace source, nothing to choose. Named in the trace all the same: `sluice
// trace report` calls such spans executing (docs/tool.md).
bool trace_backend_begin() {
  trace::note_source("\"trace_source\": \"host\"");
  return false;
}

// Host operations submit their records when they complete: nothing to collect.
void trace_backend_collect() {}

void enqueue_trace_marker(stream_ref s, const std::string& name, bool begin, std::uint64_t range) {
  auto& st = checked(s, begin ? "sluice::trace_range" : "sluice::trace_range::~trace_range");
  if (!trace::enabled()) return;
  enqueue(st, new marker_op(begin, name, range));
}

void enqueue_wait(stream_state& s, stream_state& other, seq_t target) {
  // Already reached: nothing to hold (also keeps a stream's wait on itself trivial).
  if (other.completed.load(std::memory_order_acquire) >= target) return;
  if (mutation::is(mutation::kind::ignore_event_waits)) return;
  enqueue(s, new wait_position_op(&other, target));
}

}  // namespace detail

using detail::checked;

stream::stream(sluice::device d, stream_options o)
    : stream_ref(static_cast<detail::stream_state*>(nullptr), 0U) {
  auto& dev = detail::engine().dev(d.id());
  const int native = detail::effective_native_priority(o, detail::host_priority_range,
                                                       detail::host_default_priority);
  state_ = detail::engine().new_stream(dev, native);
  generation_ = state_->generation.load(std::memory_order_relaxed);
  detail::stream_names::adopt(state_->trace_id, std::move(o.name));
}

stream borrow(sluice::device d, native_stream_t s) {
  constexpr const char* api = "sluice::borrow";
  auto& dev = detail::engine().dev(d.id());
  if (s == nullptr && detail::mutation::is(detail::mutation::kind::borrow_accepts_any))
    return stream(d);
  if (s == nullptr) detail::fail(errc::invalid_argument, api, "the native stream is null (NAT-3)");
  // The host backend can tell whose a native stream is: it must be a live
  // stream of one of its devices.
  auto* target = reinterpret_cast<detail::stream_state*>(s);
  int owner = -1;
  for (const auto& other : detail::engine().devices) {
    std::lock_guard<std::mutex> lock(other->streams_m);
    for (const detail::stream_state* x : other->streams)
      if (x == target) owner = other->id;
  }
  if (owner < 0)
    detail::fail(errc::invalid_argument, api,
                 "the native stream is not a live stream of the host backend");
  if (owner != d.id())
    detail::fail(errc::invalid_argument, api, "the native stream belongs to device ", owner,
                 ", not to device ", d.id());
  if (target->alias != nullptr) target = target->alias;  // a borrowed stream's handle
  if (detail::mutation::is(detail::mutation::kind::borrow_own_queue)) return stream(d);
  detail::stream_state* borrowed = detail::engine().new_stream(dev, target->native_priority);
  target->add_ref();
  borrowed->alias = target;
  borrowed->alias_generation = target->generation.load(std::memory_order_relaxed);
  return detail::access::make_stream(borrowed);
}

void reserve_streams(sluice::device d, int count, stream_options /*o*/) {
  constexpr const char* api = "sluice::reserve_streams";
  (void)detail::engine().dev(d.id());
  if (count < 0 || count > 4096)
    detail::fail(errc::invalid_argument, api, "count ", count, " is outside [0, 4096]");
  detail::refuse_if_device_captures(d.id(), api);
  // Host streams are made without waiting for anything (IND-4): nothing to reserve.
}

stream::~stream() {
  if (state_ == nullptr) return;
  const bool busy =
      detail::diagnose::enabled() && state_->completed.load(std::memory_order_acquire) <
                                         state_->enqueued.load(std::memory_order_acquire);
  // Invalidate every stream_ref to this stream; queued work keeps the state alive.
  state_->generation.fetch_add(1, std::memory_order_relaxed);
  if (state_->alias != nullptr &&
      detail::mutation::is(detail::mutation::kind::borrow_destroys_native))
    state_->alias->generation.fetch_add(1, std::memory_order_relaxed);
  detail::report_stream_destroyed(state_->dev->id, busy, state_->failures, SLUICE_CALL_SITE(),
                                  state_->trace_id);
  state_->release();
}

device stream_ref::device() const {
  return sluice::device(checked(*this, "sluice::stream_ref::device").dev->id);
}

priority stream_ref::priority() const {
  return detail::level_of(checked(*this, "sluice::stream_ref::priority").native_priority,
                          detail::host_priority_range, detail::host_default_priority);
}

int stream_ref::native_priority() const {
  return checked(*this, "sluice::stream_ref::native_priority").native_priority;
}

std::string stream_ref::name() const {
  return detail::stream_names::of(checked(*this, "sluice::stream_ref::name").trace_id);
}

void stream_ref::set_name(std::string new_name) const {
  detail::stream_names::set(checked(*this, "sluice::stream_ref::set_name").trace_id,
                            std::move(new_name));
}

bool stream_ref::ready() const {
  auto& s = checked(*this, "sluice::stream_ref::ready");
  detail::refuse_if_capturing(s, "sluice::stream_ref::ready",
                              "ready() of a capturing stream (its recorded work never runs there)");
  // The state first, then the errors: a host function's error is recorded
  // before its operation completes, so a stream seen complete has every error
  // there to throw (HOST-4). The other order let a stream that completed in
  // between answer true without reporting its host function's exception
  // (chaos site in_query makes that window wide).
  const bool done =
      s.completed.load(std::memory_order_acquire) >= s.enqueued.load(std::memory_order_acquire);
  detail::chaos::pause(detail::chaos::site::in_query);
  detail::rethrow_host_errors(s);
  return done;
}

void stream_ref::synchronize() const {
  auto& s = checked(*this, "sluice::stream_ref::synchronize");
  detail::refuse_if_capturing(s, "sluice::stream_ref::synchronize",
                              "synchronize() of a capturing stream (its recorded work never runs "
                              "there)");
  detail::refuse_stream_self_wait(detail::current_host_function_stream() == &s,
                                  "sluice::stream_ref::synchronize");
  const detail::diagnose::synchronize_scope diagnosed(SLUICE_CALL_SITE(), "stream::synchronize");
  detail::wait_reached(s, s.enqueued.load(std::memory_order_acquire), false);
  detail::rethrow_host_errors(s);
}

void stream_ref::wait(stream_ref other) const {
  auto& s = checked(*this, "sluice::stream_ref::wait");
  auto& o = checked(other, "sluice::stream_ref::wait");
  if (detail::any_capture() &&
      detail::record_stream_wait_if_capturing(s, o, "sluice::stream_ref::wait"))
    return;
  detail::enqueue_wait(s, o, o.enqueued.load(std::memory_order_acquire));
}

void stream_ref::enqueue_host_task(std::unique_ptr<detail::host_task> task) const {
  auto& s = checked(*this, "sluice::stream_ref::host_func");
  if (detail::diagnose::enabled()) [[unlikely]]
    (void)detail::host_function_path();  // names the path, once
  if (detail::mutation::is(detail::mutation::kind::run_host_functions_early)) {
    std::thread([t = std::move(task)] { (void)detail::run_host_task(*t); }).detach();
    return;
  }
  detail::enqueue(s, detail::make_host_function_op(std::move(task)));
}

void stream_ref::write_value(flag& f, std::uint32_t v) const {
  auto& s = checked(*this, "sluice::stream_ref::write_value");
  detail::enqueue(s, new detail::write_flag_op(detail::access::state(f), v));
}

void stream_ref::wait_value(const flag& f, std::uint32_t v) const {
  auto& s = checked(*this, "sluice::stream_ref::wait_value");
  detail::enqueue(s, new detail::wait_flag_op(detail::access::state(f), v));
}

}  // namespace sluice

namespace sluice::detail {

//! A foreign operation on the host backend: someone else's work that runs on
//! the calling thread (a Kokkos kernel inside sluice::kokkos::submit's
//! function, on a sluice host thread), timed there on the stream's track.
struct foreign_op {
  trace::record r;
};

int device_memory_of(const void*) noexcept { return -1; }  // all memory is the host's

host_function_paths host_function_path_counts() noexcept { return {}; }  // no device, no path

host_function_path_choice host_function_path() {
  host_function_path_choice c{"host", "run by the host backend's threads"};
  diagnose::note_host_function_path(c.path, c.evidence);
  return c;
}

std::uint64_t enqueued_count(stream_ref s) noexcept {
  try {
    return checked(s, "sluice::detail::enqueued_count").enqueued.load(std::memory_order_acquire);
  } catch (...) {
    return unknown_count;
  }
}

void report_stream_failure(stream_ref s, errc code, std::string message) {
  auto& st = checked(s, "sluice::detail::report_stream_failure");
  st.failures.add(code, std::move(message));
}

foreign_op* begin_foreign_op(stream_ref s, const char* kind, const char* label) {
  if (!trace::enabled()) return nullptr;
  auto& st = checked(s, "sluice::detail::begin_foreign_op");
  auto op = std::make_unique<foreign_op>();
  op->r.kind = kind;
  op->r.label = label;
  op->r.device = st.dev->id;
  op->r.stream = st.trace_id;
  op->r.priority = st.native_priority;
  // Inside the stream's running operation (a host function): its position.
  op->r.seq = st.completed.load(std::memory_order_acquire) + 1;
  op->r.host_thread = trace::thread_id();
  op->r.enqueue_ns = trace::now_ns();
  op->r.start_ns = op->r.enqueue_ns;
  return op.release();
}

void prepare_runtime_environment() noexcept {}  // no vendor runtime

void end_foreign_op(foreign_op* op) noexcept {
  if (op == nullptr) return;
  op->r.end_ns = trace::now_ns();
  trace::submit(std::move(op->r));
  delete op;
}

// The probes' hooks measure the GPU backends' internals: the staged pipeline
// and the SM batch kernel. The host backend's staged copy is an operation of
// its own (peer.cpp), and it has no kernels.
void staged_copy_for_probe(stream_ref, int, int, const peer_piece*, std::size_t) {
  fail(errc::not_supported, "sluice::detail::staged_copy_for_probe",
       "the host backend has no staged pipeline of the GPU backends");
}

sm_batch_kernel_shape sm_batch_kernel_for_probe(stream_ref) {
  fail(errc::not_supported, "sluice::detail::sm_batch_kernel_for_probe",
       "the host backend launches no kernels");
}

int launch_sm_batch_for_probe(stream_ref, const peer_piece*, unsigned, unsigned) {
  fail(errc::not_supported, "sluice::detail::launch_sm_batch_for_probe",
       "the host backend launches no kernels");
}

}  // namespace sluice::detail
