// A simulated CUDA runtime (libcudart.so.<major>) for running sluice::cuda's
// code, the conformance suite included, in CI without a GPU
// (tests/fake_cudart/README.md). Unlike the stub (stub.cpp), work is asynchronous: every stream is
// a queue run in order by a thread of its own, events complete when their stream reaches them,
// stream waits block that stream's thread, stream memory waits poll host memory, host functions run
// on one shared callback thread (as CUDA's do) and hold their stream until they return, copies that
// touch memory the runtime did not allocate (pageable) return only once done, a copy from host
// memory to host memory is done on the calling thread once its stream has drained, a copy touching
// pool memory of a device other than the current one is refused unless the pool granted that
// device access, and cudaFreeHost waits for every device. It is a model of the documented CUDA
// behaviour sluice relies on, and of what CUDA was seen to do, not CUDA: no priorities (every
// stream runs at once), no kernels, no faults.
//
// SLUICE_SIM_DEVICES=N (1..8, default 2): the number of devices.
// SLUICE_SIM_JITTER=<seed>: a stream's thread pauses for a random 0-4 ms
// before none, one in four, two in four, three in four or all of its
// operations (chosen per stream, seeded), so that streams drift apart as far
// as the ordering CUDA promises allows: work that is not ordered by an event
// or a stream shows it.
// SLUICE_SIM_HW_QUEUES=N or "start" (default: off): hardware queues. Each
// device's streams are assigned to N queues round robin in creation order
// (every stream the model makes on the device counts); "start": N is
// CUDA_DEVICE_MAX_CONNECTIONS as it was when the runtime started (8 when unset
// then, at most 32), as CUDA reads it. A stream memory operation (write or
// wait) of one stream queued behind a not yet satisfied stream memory wait of
// another stream on the same queue waits for that wait to pass: the holding
// that a shared queue can do (docs/design.md, "Which host functions use the
// word watcher"). Nothing else is held: event records, copies and host
// callbacks pass a queue-mate's wait, as every GPU run showed (the channel
// probe, main's callback path; vendor-differences.md section 22).
// SLUICE_SIM_STREAM_CREATE_LIMIT=L (default 33; 0: off): creating a stream on
// a device that already has L or more live streams (created, not destroyed:
// the default stream and the library's own included) waits until the work
// every stream of that device holds has completed, as CUDA 13.0 was seen to
// do on 2x H200 (stream_create_limit below).
#include "common.hpp"
#include "sim_cupti.hpp"
#include "sim_memory.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

using fake::current_device;
using fake::failed;
using fake::valid_device;

namespace {

using clock_type = std::chrono::steady_clock;

// One lock and one condition for all of the model's state: simple, and fast
// enough for a test suite.
std::mutex& mu() {
  static auto* m = new std::mutex;
  return *m;
}
std::condition_variable& changed() {
  static auto* c = new std::condition_variable;
  return *c;
}

//! One enqueued operation, run on its stream's thread: `run` first, then
//! `finish` under the model's lock together with the stream's completion, so
//! that an event never completes before the stream position it marks.
struct op {
  std::function<void()> run;
  std::function<void()> finish;
  // A stream memory operation (SLUICE_SIM_HW_QUEUES): its place in its
  // queue's order, 0 for any other operation.
  std::uint64_t memop = 0;
};

struct capture_model;

struct stream_model {
  std::uint32_t id = 0;  // CUPTI's stream id (sim_cupti.hpp)
  int device = 0;
  int priority = 0;
  unsigned int flags = 0;
  std::deque<op> queue;  // under mu()
  std::uint64_t enqueued = 0, completed = 0;
  bool destroyed = false;
  // Its thread starts with its first operation: streams made and never used
  // (sluice's pool keeps about 130 per device) cost no thread.
  bool started = false;
  int hw_queue = 0;                          // its hardware queue (SLUICE_SIM_HW_QUEUES)
  std::shared_ptr<capture_model> capturing;  // under mu(); the capture it belongs to, if any
};

//! An open stream capture (cudaStreamBeginCapture): what its streams enqueue,
//! kept in enqueue order (an order of the graph CUDA would build), not run.
//! A stream joins it by waiting on an event recorded in it; a member other
//! than the origin must be joined back (the origin, or another member, waits
//! on an event it recorded after its last operation) before the end.
struct capture_model {
  const stream_model* origin = nullptr;
  std::vector<op> ops;
  bool invalid = false;  // a call CUDA refuses during a capture was made
  bool ended = false;
  // Per member: its operations so far, and how many of them another member waited for.
  std::map<const stream_model*, std::pair<std::size_t, std::size_t>> members;
  // The event record nodes (cudaEventRecordExternal): their place in ops, their event.
  std::vector<std::pair<std::size_t, struct event_model*>> records;
};

//! cudaStreamEndCapture's graph, and an executable graph of it.
struct graph_model {
  std::vector<op> ops;
  std::vector<std::pair<std::size_t, struct event_model*>> records;
};
struct exec_model {
  std::shared_ptr<const graph_model> graph;
  std::shared_ptr<struct capture> last;  // the previous launch's end (launches are ordered)
};

//! What a record captured: complete once its operation has run (then t_ns >= 0).
struct capture {
  std::atomic<std::int64_t> t_ns{-1};
};

struct event_model {
  int device = 0;
  bool timing = true;
  std::shared_ptr<capture> last;  // under mu(); null: never recorded
  // Last recorded inside a capture (without cudaEventRecordExternal): no node;
  // a stream that waits on it joins that capture; after the capture's end CUDA
  // refuses it everywhere until it is recorded again (sluice-probe-capture).
  std::shared_ptr<capture_model> captured;  // under mu()
  const stream_model* recorder = nullptr;
  std::size_t recorder_ops = 0;
};

//! A memory pool of one device, and the other devices it has granted access to.
struct pool_model {
  int device = 0;
  bool access[8] = {};  // under mu(); the pool's own device always has access
};

enum class memory_kind {
  device,  // cudaMalloc
  host,    // cudaHostAlloc: pinned, mapped, one address space with the devices
  pool,    // cudaMallocFromPoolAsync
};

//! One allocation of the runtime.
struct block {
  std::size_t n = 0;
  memory_kind kind = memory_kind::device;
  int device = 0;  // the device it belongs to (host memory: current at allocation)
  const pool_model* pool = nullptr;  // pool memory: its pool
  bool registered = false;           // cudaHostRegister: the program's own memory, pinned
};

struct registry {
  std::vector<std::shared_ptr<stream_model>> streams;  // every live or draining stream
  std::map<std::uintptr_t, block> memory;              // what the runtime allocated
  bool peer_enabled[8][8] = {};
  // SLUICE_SIM_HW_QUEUES: streams made per device (their queue: the count
  // modulo the queue count), the order of stream memory operations, and the
  // memory waits not yet passed, per (device, queue): order -> stream.
  int made[8] = {};
  std::uint64_t memops = 0;
  std::map<std::pair<int, int>, std::map<std::uint64_t, const stream_model*>> waits;
};
registry& reg() {
  static auto* r = new registry;
  return *r;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

//! SLUICE_SIM_CLOCK_PPM: how much faster than the host's steady clock the
//! simulated device clock runs, in parts per million (0 when unset; an H200
//! measured +3.45: docs/design.md, "Tracing"). Event times scale by it.
double clock_rate() {
  static const double rate = [] {
    const char* v = std::getenv("SLUICE_SIM_CLOCK_PPM");
    return 1.0 + (v != nullptr ? std::strtod(v, nullptr) : 0.0) * 1e-6;
  }();
  return rate;
}

//! SLUICE_SIM_JITTER's seed; 0 when unset (no pauses).
unsigned jitter_seed() {
  static const unsigned seed = [] {
    const char* v = std::getenv("SLUICE_SIM_JITTER");
    return v != nullptr ? static_cast<unsigned>(std::strtoul(v, nullptr, 10)) : 0U;
  }();
  return seed;
}

//! SLUICE_SIM_STREAM_CREATE_LIMIT (default 33; 0 turns the model off): how many live streams
//! (created, not destroyed) a device may have before creating one more waits for the device.
//! Seen on 2x H200, CUDA 13.0, driver 580.159.04: while one stream was held (a stream memory
//! wait on a host-mapped word not yet written, or any pending work),
//! cudaStreamCreateWithFlags / cudaStreamCreateWithPriority blocked inside about the 34th
//! stream creation until the device's pending work had completed (an implicit
//! synchronization); 64 streams created before the hold blocked nothing later.
int stream_create_limit() {
  static const int n = [] {
    const char* v = std::getenv("SLUICE_SIM_STREAM_CREATE_LIMIT");
    const int k = v != nullptr ? std::atoi(v) : 33;
    return k >= 0 ? k : 33;
  }();
  return n;
}

//! SLUICE_SIM_HW_QUEUES: the hardware queue count of the model, 0 when off.
int hardware_queues() {
  static const int n = [] {
    const char* v = std::getenv("SLUICE_SIM_HW_QUEUES");
    if (v == nullptr || *v == '\0') return 0;
    if (std::strcmp(v, "start") == 0) {
      fake::started("the queue model");  // no start before: it starts here
      const int asked =
          fake::start_env.connections_set ? std::atoi(fake::start_env.connections) : 8;
      return std::clamp(asked, 1, 32);
    }
    return std::clamp(std::atoi(v), 0, 128);
  }();
  return n;
}

//! Under mu(): whether s's next operation o is a stream memory operation
//! queued behind another stream's memory wait on its queue that has not passed.
bool held_by_queue_mate(const stream_model& s, const op& o) {
  if (o.memop == 0) return false;
  const auto it = reg().waits.find({s.device, s.hw_queue});
  if (it == reg().waits.end()) return false;
  for (const auto& [order, owner] : it->second) {
    if (order >= o.memop) break;
    if (owner != &s) return true;
  }
  return false;
}

void run_stream(std::shared_ptr<stream_model> s) {
  static std::atomic<unsigned> streams{0};
  std::seed_seq seeds{jitter_seed(), streams.fetch_add(1)};
  std::minstd_rand jitter(seeds);
  // Streams differ: some never pause, some before one operation in four,
  // two or four, some before every one.
  const unsigned slowness = static_cast<unsigned>(jitter() % 5);
  std::unique_lock<std::mutex> lock(mu());
  for (;;) {
    changed().wait(lock, [&] { return !s->queue.empty() || s->destroyed; });
    if (s->queue.empty()) break;  // destroyed and drained
    if (held_by_queue_mate(*s, s->queue.front())) {
      changed().wait(lock, [&] { return !held_by_queue_mate(*s, s->queue.front()); });
    }
    op o = std::move(s->queue.front());
    lock.unlock();
    if (jitter_seed() != 0 && jitter() % 4 < slowness)
      std::this_thread::sleep_for(std::chrono::microseconds(jitter() % 4000));
    if (o.run) o.run();
    lock.lock();
    if (o.finish) o.finish();
    s->queue.pop_front();
    ++s->completed;
    changed().notify_all();
  }
  auto& all = reg().streams;
  for (auto it = all.begin(); it != all.end(); ++it)
    if (*it == s) {
      all.erase(it);
      break;
    }
  changed().notify_all();
}

//! The stream a handle names; the null handle is one default stream per device.
std::shared_ptr<stream_model> stream_of(cudaStream_t h);

//! An implicit synchronization, under mu(): the work the device's streams
//! (destroyed ones still draining included) hold now must complete; work
//! enqueued later is not waited for.
void wait_for_device_work(std::unique_lock<std::mutex>& lock, int device) {
  std::vector<std::pair<std::shared_ptr<stream_model>, std::uint64_t>> pending;
  for (const auto& t : reg().streams)
    if (t->device == device && t->completed < t->enqueued) pending.emplace_back(t, t->enqueued);
  changed().wait(lock, [&pending] {
    for (const auto& p : pending)
      if (p.first->completed < p.second) return false;
    return true;
  });
}

//! A new stream of device, running. created_by_call: made by cudaStreamCreateWith*, which first
//! waits for the device's pending work when the device already has stream_create_limit() live
//! streams or more (the default stream, made on first use, counts but never waits).
std::shared_ptr<stream_model> new_stream(int device, bool created_by_call) {
  static std::atomic<std::uint32_t> ids{1};
  auto s = std::make_shared<stream_model>();
  s->id = ids.fetch_add(1);
  s->device = device;
  {
    std::unique_lock<std::mutex> lock(mu());
    if (created_by_call && stream_create_limit() > 0) {
      int live = 0;
      for (const auto& t : reg().streams) live += t->device == device && !t->destroyed ? 1 : 0;
      if (live >= stream_create_limit()) wait_for_device_work(lock, device);
    }
    if (hardware_queues() > 0) s->hw_queue = reg().made[device]++ % hardware_queues();
    reg().streams.push_back(s);
  }
  return s;
}

struct stream_handle {
  std::shared_ptr<stream_model> s;
};

std::shared_ptr<stream_model> stream_of(cudaStream_t h) {
  if (h != nullptr) return reinterpret_cast<stream_handle*>(h)->s;
  static auto* defaults = new std::vector<std::shared_ptr<stream_model>>(8);
  std::shared_ptr<stream_model>& d = (*defaults)[static_cast<std::size_t>(current_device)];
  static std::mutex m;
  std::lock_guard<std::mutex> lock(m);
  if (!d) d = new_stream(current_device, false);
  return d;
}

//! Enqueues o on h's stream; returns the position it will complete at.
//! kind: a stream memory operation's (SLUICE_SIM_HW_QUEUES).
enum class memop_kind { none, write, wait };

std::uint64_t enqueue(cudaStream_t h, std::function<void()> run,
                      std::shared_ptr<stream_model>* out = nullptr,
                      std::function<void()> finish = {}, memop_kind kind = memop_kind::none) {
  op o{std::move(run), std::move(finish)};
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  if (s->capturing) {  // a node of the capture's graph: nothing runs now
    ++s->capturing->members[s.get()].first;
    s->capturing->ops.push_back(std::move(o));
    if (out != nullptr) *out = s;
    return 0;
  }
  if (kind != memop_kind::none && hardware_queues() > 0) {
    o.memop = ++reg().memops;
    if (kind == memop_kind::wait) {
      const std::pair<int, int> q{s->device, s->hw_queue};
      reg().waits[q][o.memop] = s.get();
      o.finish = [q, order = o.memop] { reg().waits[q].erase(order); };  // under mu()
    }
  }
  s->queue.push_back(std::move(o));
  const std::uint64_t at = ++s->enqueued;
  if (!s->started) {
    s->started = true;
    std::thread(run_stream, s).detach();  // it waits for mu() like every stream thread
  }
  changed().notify_all();
  if (out != nullptr) *out = s;
  return at;
}

void wait_until(const std::function<bool()>& done) {
  std::unique_lock<std::mutex> lock(mu());
  changed().wait(lock, done);
}

void wait_for(const std::shared_ptr<stream_model>& s, std::uint64_t at) {
  wait_until([&] { return s->completed >= at; });
}

//! Whether h's stream belongs to an open capture.
bool captures(cudaStream_t h) {
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  return s->capturing != nullptr;
}

//! Under mu(): a call CUDA refuses during a capture spoils the capture (its end
//! returns cudaErrorStreamCaptureInvalidated and no graph).
cudaError_t invalidate(capture_model& c, cudaError_t e) {
  c.invalid = true;
  return e;
}

//! The allocation p lies in; null: memory the runtime did not allocate (pageable). Under mu().
const block* block_of(const void* p) {
  const auto x = reinterpret_cast<std::uintptr_t>(p);
  const auto& m = reg().memory;
  auto it = m.upper_bound(x);
  if (it == m.begin()) return nullptr;
  --it;
  return x < it->first + it->second.n ? &it->second : nullptr;
}

bool runtime_memory(const void* p) {
  std::lock_guard<std::mutex> lock(mu());
  return block_of(p) != nullptr;
}

//! Pinned or pageable: memory of the host.
bool host_memory(const void* p) {
  std::lock_guard<std::mutex> lock(mu());
  const block* b = block_of(p);
  return b == nullptr || b->kind == memory_kind::host;
}

//! A host range that starts inside pinned memory the runtime knows (cudaHostRegister'ed or
//! cudaMallocHost'ed) and runs past that block's end. Seen on an H200, CUDA 13.0, driver 580:
//! the runtime takes such a pointer as the registration it starts in, and cudaMemcpyAsync of a
//! range running past the registration's end returns cudaErrorInvalidValue. A range that starts
//! in memory the runtime does not know is pageable, wherever it ends (staged).
bool host_block_overrun(const void* p, std::size_t n) {
  std::lock_guard<std::mutex> lock(mu());
  const auto x = reinterpret_cast<std::uintptr_t>(p);
  const auto& m = reg().memory;
  auto it = m.upper_bound(x);
  if (it == m.begin()) return false;
  --it;
  const auto& b = it->second;
  return b.kind == memory_kind::host && x < it->first + b.n && n > it->first + b.n - x;
}

//! Memory from a pool of a device other than the current one that has not granted the current
//! device access. Observed on 2x H200, CUDA 13.0, driver 580.159.04, 2026-11-23 (conformance
//! PEER_2's read_back, on a stream of device 1 while device 0 was current): cudaMemcpyAsync
//! touching such memory returns cudaErrorInvalidValue, whatever the stream's device.
//! cudaMemsetAsync, cudaMallocFromPoolAsync and cudaFreeAsync on it succeeded there
//! (sluice-probe-xdev, docs/conformance/README.md), and so they do here.
bool pool_memory_out_of_reach(const void* p) {
  std::lock_guard<std::mutex> lock(mu());
  const block* b = block_of(p);
  return b != nullptr && b->kind == memory_kind::pool && b->pool->device != current_device &&
         !b->pool->access[current_device];
}

void* allocate(std::size_t n, block b) {
  void* p = std::aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  if (p != nullptr) {
    b.n = n == 0 ? 1 : n;
    std::lock_guard<std::mutex> lock(mu());
    reg().memory[reinterpret_cast<std::uintptr_t>(p)] = b;
  }
  return p;
}

void release(void* p) {
  if (p == nullptr) return;
  {
    std::lock_guard<std::mutex> lock(mu());
    reg().memory.erase(reinterpret_cast<std::uintptr_t>(p));
  }
  std::free(p);
}

// CUDA runs every host-function callback on one thread of its own, in order.
struct callback_thread {
  std::deque<std::function<void()>> queue;  // under mu()
  callback_thread() {
    std::thread([this] {
      std::unique_lock<std::mutex> lock(mu());
      for (;;) {
        changed().wait(lock, [&] { return !queue.empty(); });
        auto f = std::move(queue.front());
        queue.pop_front();
        lock.unlock();
        f();
        lock.lock();
        changed().notify_all();
      }
    }).detach();
  }
};
callback_thread& callbacks() {
  static auto* c = new callback_thread;
  return *c;
}

CUresult wait_value64_impl(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned int) {
  auto* word = reinterpret_cast<std::atomic<std::uint64_t>*>(addr);
  enqueue(
      reinterpret_cast<cudaStream_t>(h),
      [word, value] {
        // The device polls host memory; so does the model.
        while (word->load() < value) std::this_thread::sleep_for(std::chrono::microseconds(20));
      },
      nullptr, {}, memop_kind::wait);
  return CUDA_SUCCESS;
}

CUresult write_value64_impl(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned int) {
  auto* word = reinterpret_cast<std::atomic<std::uint64_t>*>(addr);
  enqueue(
      reinterpret_cast<cudaStream_t>(h), [word, value] { word->store(value); }, nullptr, {},
      memop_kind::write);
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

cudaError_t cudaDeviceSynchronize() {
  const int d = current_device;
  {
    std::lock_guard<std::mutex> lock(mu());
    bool refused = false;
    for (const auto& s : reg().streams)
      if (s->device == d && s->capturing) {
        (void)invalidate(*s->capturing, cudaErrorStreamCaptureUnsupported);
        refused = true;
      }
    if (refused) return cudaErrorStreamCaptureUnsupported;
  }
  wait_until([d] {
    for (const auto& s : reg().streams)
      if (s->device == d && s->completed < s->enqueued) return false;
    return true;
  });
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* h, unsigned int flags, int priority) {
  fake::started("cudaStreamCreateWithPriority");
  // May wait for the device (stream_create_limit).
  auto s = new_stream(current_device, true);
  s->priority = priority;
  s->flags = flags;
  *h = reinterpret_cast<cudaStream_t>(new stream_handle{std::move(s)});
  return cudaSuccess;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t* h, unsigned int flags) {
  return cudaStreamCreateWithPriority(h, flags, 0);
}
cudaError_t cudaStreamGetDevice(cudaStream_t h, int* d) {
  *d = stream_of(h)->device;
  return cudaSuccess;
}
cudaError_t cudaStreamGetPriority(cudaStream_t h, int* priority) {
  *priority = stream_of(h)->priority;
  return cudaSuccess;
}
cudaError_t cudaStreamGetFlags(cudaStream_t h, unsigned int* flags) {
  *flags = stream_of(h)->flags;
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t h) {
  // Returns at once; the stream's work still runs (the runtime's documented behaviour).
  auto* handle = reinterpret_cast<stream_handle*>(h);
  {
    std::lock_guard<std::mutex> lock(mu());
    handle->s->destroyed = true;
    if (!handle->s->started) {
      // No thread ever ran it: it leaves the registry here (run_stream does it otherwise).
      auto& all = reg().streams;
      for (auto it = all.begin(); it != all.end(); ++it)
        if (*it == handle->s) {
          all.erase(it);
          break;
        }
    }
    changed().notify_all();
  }
  delete handle;
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t h) {
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  if (s->capturing) return invalidate(*s->capturing, cudaErrorStreamCaptureUnsupported);
  return s->completed == s->enqueued ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamSynchronize(cudaStream_t h) {
  auto s = stream_of(h);
  std::uint64_t at = 0;
  {
    std::lock_guard<std::mutex> lock(mu());
    if (s->capturing) return invalidate(*s->capturing, cudaErrorStreamCaptureUnsupported);
    at = s->enqueued;
  }
  wait_for(s, at);
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t h, cudaEvent_t e, unsigned int) {
  sim_cupti::api_call(sim_cupti::cbid::stream_wait_event);
  std::shared_ptr<capture> c;
  {
    auto s = stream_of(h);
    std::lock_guard<std::mutex> lock(mu());
    auto* ev = reinterpret_cast<event_model*>(e);
    if (ev->captured) {
      if (ev->captured->ended) return cudaErrorInvalidValue;
      if (s->capturing && s->capturing != ev->captured)
        return invalidate(*s->capturing, cudaErrorStreamCaptureIsolation);
      s->capturing = ev->captured;  // joins it (or is a member already): an edge, no node
      auto& joined = ev->captured->members[ev->recorder].second;
      joined = std::max(joined, ev->recorder_ops);
      (void)ev->captured->members[s.get()];
      return cudaSuccess;
    }
    // An event recorded outside, waited on in a capture (no cudaEventWaitExternal).
    if (s->capturing && ev->last) return invalidate(*s->capturing, cudaErrorStreamCaptureIsolation);
    c = ev->last;
  }
  if (!c) return cudaSuccess;  // never recorded: nothing to wait for
  enqueue(h, [c] { wait_until([&] { return c->t_ns.load() >= 0; }); });
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t h, cudaHostFn_t fn, void* data) {
  sim_cupti::api_call(sim_cupti::cbid::launch_host_func);
  enqueue(h, [fn, data] {
    auto done = std::make_shared<bool>(false);
    {
      std::lock_guard<std::mutex> lock(mu());
      callbacks().queue.push_back([fn, data, done] {
        fn(data);
        std::lock_guard<std::mutex> inner(mu());
        *done = true;
      });
      changed().notify_all();
    }
    wait_until([&] { return *done; });
  });
  return cudaSuccess;
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned int flags) {
  auto* m = new event_model;
  m->device = current_device;
  m->timing = (flags & cudaEventDisableTiming) == 0;
  *e = reinterpret_cast<cudaEvent_t>(m);
  return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete reinterpret_cast<event_model*>(e);
  return cudaSuccess;
}
cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t h) {
  sim_cupti::api_call(sim_cupti::cbid::event_record);
  auto c = std::make_shared<capture>();
  {
    auto s = stream_of(h);
    std::lock_guard<std::mutex> lock(mu());
    auto* ev = reinterpret_cast<event_model*>(e);
    if (s->capturing) {  // in a capture: a point of it that other streams may join at
      ev->captured = s->capturing;
      ev->recorder = s.get();
      ev->recorder_ops = s->capturing->members[s.get()].first;
      ev->last = nullptr;
      return cudaSuccess;
    }
    ev->captured = nullptr;
    ev->last = c;
  }
  enqueue(h, {}, nullptr, [c] { c->t_ns.store(now_ns()); });
  return cudaSuccess;
}
// Stream capture and graphs. A capture keeps its streams' operations in
// enqueue order (capture_model); calls CUDA refuses during a capture spoil it
// (queries and synchronizations of a capturing stream, of an event recorded
// in it, of the device; a wait on an event recorded outside). A launch runs a
// graph's operations one after another on the launch stream, after the
// exec's previous launch (CUDA orders launches of one exec, whatever their
// streams: sluice-probe-capture). An event recorded with
// cudaEventRecordExternal in a capture is a node: the launch records it there.
cudaError_t cudaStreamBeginCapture(cudaStream_t h, cudaStreamCaptureMode) {
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  if (s->capturing) return cudaErrorIllegalState;
  s->capturing = std::make_shared<capture_model>();
  s->capturing->origin = s.get();
  (void)s->capturing->members[s.get()];
  return cudaSuccess;
}
cudaError_t cudaStreamEndCapture(cudaStream_t h, cudaGraph_t* g) {
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  if (g != nullptr) *g = nullptr;
  const auto c = s->capturing;
  if (!c) return cudaErrorIllegalState;
  if (c->origin != s.get()) return invalidate(*c, cudaErrorStreamCaptureUnmatched);
  c->ended = true;
  for (const auto& t : reg().streams)
    if (t->capturing == c) t->capturing = nullptr;
  s->capturing = nullptr;
  if (c->invalid) return cudaErrorStreamCaptureInvalidated;
  for (const auto& [member, counts] : c->members)
    if (member != c->origin && counts.first > counts.second) return cudaErrorStreamCaptureUnjoined;
  if (g != nullptr)
    *g = reinterpret_cast<cudaGraph_t>(new graph_model{std::move(c->ops), std::move(c->records)});
  return cudaSuccess;
}
cudaError_t cudaGraphInstantiateWithFlags(cudaGraphExec_t* e, cudaGraph_t g, unsigned long long) {
  if (g == nullptr) return cudaErrorInvalidValue;
  auto* x = new exec_model;
  x->graph = std::make_shared<const graph_model>(*reinterpret_cast<graph_model*>(g));
  *e = reinterpret_cast<cudaGraphExec_t>(x);
  return cudaSuccess;
}
cudaError_t cudaGraphLaunch(cudaGraphExec_t e, cudaStream_t h) {
  if (e == nullptr) return cudaErrorInvalidValue;
  if (captures(h)) return cudaErrorStreamCaptureUnsupported;  // no child graphs here
  auto* x = reinterpret_cast<exec_model*>(e);
  auto done = std::make_shared<capture>();
  std::shared_ptr<capture> before;
  // Each record node's event is this launch's from the launch on: a wait or a
  // query after cudaGraphLaunch sees the record as pending until the launch
  // reaches the node (as on an H200: a later stream waited on the launch's end).
  std::vector<std::shared_ptr<capture>> records;
  {
    std::lock_guard<std::mutex> lock(mu());
    before = std::exchange(x->last, done);
    for (const auto& [at, ev] : x->graph->records) {
      records.push_back(std::make_shared<capture>());
      ev->captured = nullptr;
      ev->last = records.back();
    }
  }
  enqueue(
      h,
      [graph = x->graph, before, records] {
        if (before) wait_until([&] { return before->t_ns.load() >= 0; });
        std::size_t next_record = 0;
        for (std::size_t k = 0; k < graph->ops.size(); ++k) {
          const op& o = graph->ops[k];
          if (o.run) o.run();
          std::lock_guard<std::mutex> lock(mu());
          if (o.finish) o.finish();
          while (next_record < records.size() && graph->records[next_record].first == k)
            records[next_record++]->t_ns.store(now_ns());
          changed().notify_all();
        }
      },
      nullptr, [done] { done->t_ns.store(now_ns()); });
  return cudaSuccess;
}
cudaError_t cudaGraphExecDestroy(cudaGraphExec_t e) {
  delete reinterpret_cast<exec_model*>(e);  // launches in flight keep what they run
  return cudaSuccess;
}
cudaError_t cudaGraphDestroy(cudaGraph_t g) {
  delete reinterpret_cast<graph_model*>(g);
  return cudaSuccess;
}
cudaError_t cudaStreamIsCapturing(cudaStream_t h, cudaStreamCaptureStatus* status) {
  if (status == nullptr) return cudaErrorInvalidValue;
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  *status = !s->capturing           ? cudaStreamCaptureStatusNone
            : s->capturing->invalid ? cudaStreamCaptureStatusInvalidated
                                    : cudaStreamCaptureStatusActive;
  return cudaSuccess;
}
cudaError_t cudaGraphGetNodes(cudaGraph_t g, cudaGraphNode_t* nodes, size_t* n) {
  if (g == nullptr || n == nullptr || nodes != nullptr) return cudaErrorInvalidValue;
  *n = reinterpret_cast<graph_model*>(g)->ops.size();
  return cudaSuccess;
}
// A capture's graph, as cudaStreamGetCaptureInfo gives it, is its capture_model;
// a child graph added to it joins its operations, in order, and a graph's record
// nodes stay record nodes (the dependencies are the enqueue order, as above).
cudaError_t cudaStreamGetCaptureInfo(cudaStream_t h, cudaStreamCaptureStatus* status,
                                     unsigned long long* id, cudaGraph_t* graph,
                                     const cudaGraphNode_t** deps, const cudaGraphEdgeData** data,
                                     size_t* count) {
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  if (status != nullptr)
    *status = s->capturing ? (s->capturing->invalid ? cudaStreamCaptureStatusInvalidated
                                                    : cudaStreamCaptureStatusActive)
                           : cudaStreamCaptureStatusNone;
  if (id != nullptr) *id = reinterpret_cast<std::uintptr_t>(s->capturing.get());
  if (graph != nullptr) *graph = reinterpret_cast<cudaGraph_t>(s->capturing.get());
  if (deps != nullptr) *deps = nullptr;
  if (data != nullptr) *data = nullptr;
  if (count != nullptr) *count = 0;
  return cudaSuccess;
}
cudaError_t cudaGraphAddChildGraphNode(cudaGraphNode_t* node, cudaGraph_t graph,
                                       const cudaGraphNode_t*, size_t, cudaGraph_t child) {
  if (node == nullptr || graph == nullptr || child == nullptr) return cudaErrorInvalidValue;
  std::lock_guard<std::mutex> lock(mu());
  capture_model* c = nullptr;
  for (const auto& t : reg().streams)
    if (t->capturing.get() == reinterpret_cast<capture_model*>(graph)) c = t->capturing.get();
  if (c == nullptr || c->ended) return cudaErrorInvalidValue;  // only a capture's graph here
  const auto& g = *reinterpret_cast<graph_model*>(child);
  for (const auto& [at, ev] : g.records) c->records.emplace_back(c->ops.size() + at, ev);
  c->ops.insert(c->ops.end(), g.ops.begin(), g.ops.end());
  *node = reinterpret_cast<cudaGraphNode_t>(child);
  return cudaSuccess;
}
cudaError_t cudaStreamUpdateCaptureDependencies(cudaStream_t h, cudaGraphNode_t* nodes,
                                                const cudaGraphEdgeData*, size_t n, unsigned int) {
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  if (!s->capturing || (n > 0 && nodes == nullptr)) return cudaErrorIllegalState;
  if (n > 0) ++s->capturing->members[s.get()].first;  // the stream's work now ends at the node
  return cudaSuccess;
}
cudaError_t cudaEventRecordWithFlags(cudaEvent_t e, cudaStream_t h, unsigned int flags) {
  if ((flags & cudaEventRecordExternal) == 0 || !captures(h)) return cudaEventRecord(e, h);
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  if (!s->capturing) return cudaErrorIllegalState;  // its capture ended meanwhile
  auto& c = *s->capturing;
  ++c.members[s.get()].first;
  c.records.emplace_back(c.ops.size(), reinterpret_cast<event_model*>(e));
  c.ops.push_back(op{});  // the node: a launch records the event when it reaches it
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(mu());
  if (auto& in = reinterpret_cast<event_model*>(e)->captured)
    return in->ended ? cudaErrorInvalidValue : invalidate(*in, cudaErrorCapturedEvent);
  const auto& c = reinterpret_cast<event_model*>(e)->last;
  return !c || c->t_ns.load() >= 0 ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::shared_ptr<capture> c;
  {
    std::lock_guard<std::mutex> lock(mu());
    if (auto& in = reinterpret_cast<event_model*>(e)->captured)
      return in->ended ? cudaErrorInvalidValue : invalidate(*in, cudaErrorCapturedEvent);
    c = reinterpret_cast<event_model*>(e)->last;
  }
  if (c) wait_until([&] { return c->t_ns.load() >= 0; });
  return cudaSuccess;
}
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t a, cudaEvent_t b) {
  std::lock_guard<std::mutex> lock(mu());
  auto* x = reinterpret_cast<event_model*>(a);
  auto* y = reinterpret_cast<event_model*>(b);
  if (!x->timing || !y->timing || !x->last || !y->last)
    return failed(cudaErrorInvalidResourceHandle);
  const std::int64_t tx = x->last->t_ns.load(), ty = y->last->t_ns.load();
  if (tx < 0 || ty < 0) return failed(cudaErrorNotReady);
  *ms = static_cast<float>(static_cast<double>(ty - tx) * clock_rate() / 1e6);
  return cudaSuccess;
}

namespace {
cudaError_t allocate(void** p, size_t n, memory_kind kind, int device,
                     const pool_model* pool = nullptr) {
  block b;
  b.kind = kind;
  b.device = device;
  b.pool = pool;
  *p = allocate(n, b);
  return *p != nullptr ? cudaSuccess : failed(cudaErrorMemoryAllocation);
}
}  // namespace

cudaError_t cudaMalloc(void** p, size_t n) {
  return allocate(p, n, memory_kind::device, current_device);
}
cudaError_t cudaFree(void* p) {
  release(p);
  return cudaSuccess;
}
cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps* props) {
  auto* m = new pool_model;  // never deleted: memory from it may outlive cudaMemPoolDestroy
  m->device = props != nullptr && props->location.type == cudaMemLocationTypeDevice
                  ? props->location.id
                  : current_device;
  if (!valid_device(m->device)) {
    delete m;
    return failed(cudaErrorInvalidValue);
  }
  *pool = reinterpret_cast<cudaMemPool_t>(m);
  return cudaSuccess;
}
cudaError_t cudaMemPoolDestroy(cudaMemPool_t) {
  return cudaSuccess;  // the model stays: memory not yet freed still names it (CUDA defers too)
}
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t pool, const cudaMemAccessDesc* map, size_t count) {
  auto* m = reinterpret_cast<pool_model*>(pool);
  for (size_t i = 0; i < count; ++i)
    if (map[i].location.type != cudaMemLocationTypeDevice || !valid_device(map[i].location.id))
      return failed(cudaErrorInvalidValue);
  std::lock_guard<std::mutex> lock(mu());
  for (size_t i = 0; i < count; ++i)
    m->access[map[i].location.id] = map[i].flags == cudaMemAccessFlagsProtReadWrite;
  return cudaSuccess;
}
cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t pool, cudaStream_t) {
  // Available at once: stream order is trivially kept.
  const auto* m = reinterpret_cast<const pool_model*>(pool);
  return allocate(p, n, memory_kind::pool, m->device, m);
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t h) {
  enqueue(h, [p] { release(p); });
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) {
  return allocate(p, n, memory_kind::host, current_device);
}
cudaError_t cudaMallocHost(void** p, size_t n) {
  return allocate(p, n, memory_kind::host, current_device);
}
cudaError_t cudaFreeHost(void* p) {
  // Documented to synchronize the device: here, every device.
  wait_until([] {
    for (const auto& s : reg().streams)
      if (s->completed < s->enqueued) return false;
    return true;
  });
  release(p);
  return cudaSuccess;
}
cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  std::memset(a, 0, sizeof *a);
  a->type = cudaMemoryTypeUnregistered;
  a->device = -2;  // as CUDA for memory it does not know
  std::lock_guard<std::mutex> lock(mu());
  if (const block* b = block_of(p)) {
    a->device = b->device;
    a->devicePointer = const_cast<void*>(p);  // one address space
    if (b->kind == memory_kind::host) {
      a->type = cudaMemoryTypeHost;
      a->hostPointer = const_cast<void*>(p);
    } else {
      a->type = cudaMemoryTypeDevice;
    }
  }
  return cudaSuccess;
}

namespace {
//! A copy that touches pageable memory returns once it is done (as CUDA's do).
//! `move` does the copy (empty: n bytes from src to dst).
cudaError_t copy(void* dst, const void* src, size_t n, cudaStream_t h, int cbid,
                 sim_cupti::activity what = sim_cupti::activity::copy,
                 std::function<void()> move = {}) {
  std::shared_ptr<stream_model> s;
  const std::uint32_t c = sim_cupti::api_call(cbid);
  const auto on = stream_of(h);
  const std::uint32_t sid = on->id;
  const int device = on->device;
  if (!move) move = [=] { std::memcpy(dst, src, n); };
  const std::uint64_t at = enqueue(
      h,
      [=] {
        const std::uint64_t t0 = sim_cupti::now();
        move();
        sim_cupti::ran(what, c, sid, device, t0, sim_cupti::now(), n, nullptr);
      },
      &s);
  if (!runtime_memory(dst) || !runtime_memory(src)) wait_for(s, at);
  return cudaSuccess;
}

//! From host memory to host memory, pinned or pageable: "fully synchronous with respect to the
//! host" (CUDA runtime API, "API synchronization behavior"). The calling thread waits until the
//! stream has run its earlier work, copies, and only then lets the stream go on to later work.
//! A stream held until the host writes a word holds the caller too (seen on 2x H200).
cudaError_t copy_on_caller(void* dst, const void* src, size_t n, cudaStream_t h, int cbid,
                           const std::function<void()>& move = {}) {
  struct handoff {
    bool reached = false, copied = false;  // under mu()
  };
  auto x = std::make_shared<handoff>();
  std::shared_ptr<stream_model> s;
  const std::uint32_t c = sim_cupti::api_call(cbid);
  const std::uint64_t at = enqueue(
      h,
      [x] {
        std::unique_lock<std::mutex> lock(mu());
        x->reached = true;
        changed().notify_all();
        changed().wait(lock, [&] { return x->copied; });
      },
      &s);
  wait_until([&] { return x->reached; });
  const std::uint64_t t0 = sim_cupti::now();
  if (move)
    move();
  else
    std::memcpy(dst, src, n);
  sim_cupti::ran(sim_cupti::activity::copy, c, s->id, s->device, t0, sim_cupti::now(), n, nullptr);
  {
    std::lock_guard<std::mutex> lock(mu());
    x->copied = true;
    changed().notify_all();
  }
  wait_for(s, at);  // the stream is past the copy when the call returns
  return cudaSuccess;
}
}  // namespace

}  // extern "C"

cudaError_t sim::copy(void* dst, const void* src, std::size_t bytes, std::function<void()> move,
                      cudaStream_t h, int cbid, bool peer) {
  if (peer)
    return ::copy(dst, src, bytes, h, cbid, sim_cupti::activity::copy_peer, std::move(move));
  if (pool_memory_out_of_reach(dst) || pool_memory_out_of_reach(src))
    return failed(cudaErrorInvalidValue);
  if (host_memory(dst) && host_memory(src) && !captures(h))
    return copy_on_caller(dst, src, bytes, h, cbid, move);
  return ::copy(dst, src, bytes, h, cbid, sim_cupti::activity::copy, std::move(move));
}

std::size_t sim::max_pitch() { return fake::max_pitch; }
bool sim::host_overrun(const void* p, std::size_t footprint) {
  return host_block_overrun(p, footprint);
}
cudaError_t sim::fail(cudaError_t e) { return failed(e); }
bool sim::valid_device(int d) { return fake::valid_device(d); }

cudaError_t sim::register_host(void* p, std::size_t n) {
  if (p == nullptr || n == 0) return failed(cudaErrorInvalidValue);
  const auto first = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mu());
  auto& m = reg().memory;
  // Any byte of the range already known to the runtime (registered or allocated).
  const auto next = m.lower_bound(first);
  if (block_of(p) != nullptr || (next != m.end() && next->first - first < n))
    return failed(cudaErrorHostMemoryAlreadyRegistered);
  block b;
  b.n = n;
  b.kind = memory_kind::host;
  b.device = current_device;
  b.registered = true;
  m[first] = b;
  return cudaSuccess;
}

cudaError_t sim::unregister_host(void* p) {
  if (p == nullptr) return failed(cudaErrorInvalidValue);
  // As cudaFreeHost: the device's work in flight first (every device's here).
  wait_until([] {
    for (const auto& s : reg().streams)
      if (s->completed < s->enqueued) return false;
    return true;
  });
  std::lock_guard<std::mutex> lock(mu());
  const auto it = reg().memory.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == reg().memory.end() || !it->second.registered)
    return failed(cudaErrorHostMemoryNotRegistered);
  reg().memory.erase(it);
  return cudaSuccess;
}

extern "C" {

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t h) {
  if (pool_memory_out_of_reach(dst) || pool_memory_out_of_reach(src))
    return failed(cudaErrorInvalidValue);
  if (host_block_overrun(dst, n) || host_block_overrun(src, n))
    return failed(cudaErrorInvalidValue);
  constexpr int cbid = sim_cupti::cbid::memcpy_async;
  if (host_memory(dst) && host_memory(src)) return copy_on_caller(dst, src, n, h, cbid);
  return copy(dst, src, n, h, cbid);
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t n, cudaStream_t h) {
  // Device memory at both ends: no host-to-host rule. Pool memory of a device neither current nor
  // granted was copied without error on 2x H200 (PEER-2 passes there:
  // docs/results/runs/2026-11-23-cuda-2xh200-first-conformance-run.md): no pool access check.
  return copy(dst, src, n, h, sim_cupti::cbid::memcpy_peer_async, sim_cupti::activity::copy_peer);
}
//! One operation on the stream that does every copy (CUDA: "the batch as a whole executes in
//! stream order"); device memory only here, as sluice's copy_peer_batch uses it.
cudaError_t cudaMemcpyBatchAsync(void* const* dsts, const void* const* srcs, const size_t* sizes,
                                 size_t count, cudaMemcpyAttributes* attrs, size_t* attrs_idxs,
                                 size_t num_attrs, cudaStream_t h) {
  if (count == 0 || dsts == nullptr || srcs == nullptr || sizes == nullptr || attrs == nullptr ||
      attrs_idxs == nullptr || num_attrs == 0 || num_attrs > count || h == nullptr)
    return failed(cudaErrorInvalidValue);
  std::vector<void*> d(dsts, dsts + count);
  std::vector<const void*> s(srcs, srcs + count);
  std::vector<size_t> n(sizes, sizes + count);
  const std::uint32_t c = sim_cupti::api_call(sim_cupti::cbid::memcpy_batch_async);
  const auto on = stream_of(h);
  enqueue(h, [d = std::move(d), s = std::move(s), n = std::move(n), c, sid = on->id,
              device = on->device] {
    for (std::size_t i = 0; i < n.size(); ++i) {
      const std::uint64_t t0 = sim_cupti::now();
      std::memcpy(d[i], s[i], n[i]);
      sim_cupti::ran(sim_cupti::activity::copy, c, sid, device, t0, sim_cupti::now(), n[i],
                     nullptr);
    }
  });
  return cudaSuccess;
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t h) {
  // As the copies: a host range running past the pinned block it starts in.
  if (host_block_overrun(dst, n)) return failed(cudaErrorInvalidValue);
  const std::uint32_t c = sim_cupti::api_call(sim_cupti::cbid::memset_async);
  const auto on = stream_of(h);
  enqueue(h, [=, sid = on->id, device = on->device] {
    const std::uint64_t t0 = sim_cupti::now();
    std::memset(dst, value, n);
    sim_cupti::ran(sim_cupti::activity::fill, c, sid, device, t0, sim_cupti::now(), n, nullptr);
  });
  return cudaSuccess;
}

//! A test's own kernel (no kernels run here): an operation on h's stream that
//! CUPTI reports as a kernel named `name` (mangled, as CUPTI gives it), taking
//! `us` microseconds of host time. Not a CUDA call: tests look it up with dlsym.
cudaError_t sluice_sim_user_kernel(cudaStream_t h, const char* name, unsigned us) {
  const std::uint32_t c = sim_cupti::api_call(sim_cupti::cbid::launch_kernel);
  const auto on = stream_of(h);
  std::string kept(name != nullptr ? name : "");
  enqueue(h, [c, sid = on->id, device = on->device, kept, us] {
    const std::uint64_t t0 = sim_cupti::now();
    const auto until = clock_type::now() + std::chrono::microseconds(us);
    while (clock_type::now() < until) {
    }
    sim_cupti::ran(sim_cupti::activity::kernel, c, sid, device, t0, sim_cupti::now(), 0,
                   kept.c_str());
  });
  return cudaSuccess;
}

//! Device work of another library (the simulated NCCL, sim_nccl.cpp): fn(data)
//! runs on h's stream's own thread, in stream order, and holds the stream
//! until it returns (as a kernel does). Not a CUDA call.
cudaError_t sluice_sim_stream_op(cudaStream_t h, void (*fn)(void*), void* data) {
  sim_cupti::api_call(sim_cupti::cbid::launch_kernel);
  enqueue(h, [fn, data] { fn(data); });
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int d, int peer) {
  if (!valid_device(d) || !valid_device(peer)) return failed(cudaErrorInvalidDevice);
  *can = d != peer ? 1 : 0;
  return cudaSuccess;
}
//! SLUICE_SIM_PEER_LIMIT (default 8): the most peers one device may enable. CUDA's
//! programming guide: without NVSwitch "each device can support a system-wide maximum of
//! eight peer connections"; beyond it, cudaErrorTooManyPeers ("the hardware resources
//! required to enable peer access have been exhausted").
static int peer_limit() {
  static const int n = [] {
    const char* v = std::getenv("SLUICE_SIM_PEER_LIMIT");
    const int k = v != nullptr ? std::atoi(v) : 8;
    return k >= 1 ? k : 8;
  }();
  return n;
}

cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int) {
  if (!valid_device(peer) || peer == current_device) return failed(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(mu());
  bool& on = reg().peer_enabled[current_device][peer];
  if (on) return failed(cudaErrorPeerAccessAlreadyEnabled);  // as CUDA: an error, left as the last
  int peers = 0;
  for (const bool p : reg().peer_enabled[current_device]) peers += p ? 1 : 0;
  if (peers >= peer_limit()) return failed(cudaErrorTooManyPeers);
  on = true;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetP2PAttribute(int* v, cudaDeviceP2PAttr attr, int src, int dst) {
  if (!valid_device(src) || !valid_device(dst)) return failed(cudaErrorInvalidDevice);
  *v = attr == cudaDevP2PAttrPerformanceRank ? 0 : (src != dst ? 1 : 0);
  return cudaSuccess;
}

}  // extern "C"

std::uint32_t sim_stream_id(void* h) noexcept {
  return stream_of(static_cast<cudaStream_t>(h))->id;
}

namespace fake {
const char* runtime_name() { return "simulated runtime (no GPU)"; }
int device_count() {
  static const int n = [] {
    const char* v = std::getenv("SLUICE_SIM_DEVICES");
    const int k = v != nullptr ? std::atoi(v) : 2;
    return k >= 1 && k <= 8 ? k : 2;
  }();
  return n;
}
CUresult wait_value64(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) {
  return wait_value64_impl(s, a, v, f);
}
CUresult write_value64(CUstream s, CUdeviceptr a, cuuint64_t v, unsigned int f) {
  return write_value64_impl(s, a, v, f);
}
//! Lazy loading: unless CUDA_MODULE_LOADING was EAGER when the runtime
//! started (CUDA 12.2+ loads lazily by default), a kernel is loaded on a
//! device at its first launch there, or when its attributes are first asked
//! for, and loading it is an implicit synchronization of that device (CUDA's
//! programming guide, "Lazy Loading": loading a kernel may need the context
//! to synchronize, so a kernel launched while another stream of the device
//! waits can wait for that stream). Each kernel is loaded on its own: a
//! module's other kernels are not loaded with it.
void kernel_used(const void* host_stub, int device) {
  started("a kernel's first use");
  static const bool eager =
      start_env.module_loading_set && std::strcmp(start_env.module_loading, "EAGER") == 0;
  if (eager || !valid_device(device)) return;
  static auto* loaded = new std::set<std::pair<const void*, int>>();  // under mu()
  std::unique_lock<std::mutex> lock(mu());
  if (loaded->count({host_stub, device}) != 0) return;
  wait_for_device_work(lock, device);
  loaded->insert({host_stub, device});
}
int stream_device(cudaStream_t h) { return stream_of(h)->device; }
cudaError_t graph_kernel(bool fill, cudaStream_t h, void** args) {
  auto* dst = *static_cast<unsigned char**>(args[0]);
  if (fill) {
    const unsigned char value = *static_cast<unsigned char*>(args[1]);
    return cudaMemsetAsync(dst, value, *static_cast<std::size_t*>(args[2]), h);
  }
  const auto* src = *static_cast<const unsigned char**>(args[1]);
  return cudaMemcpyAsync(dst, src, *static_cast<std::size_t*>(args[2]), cudaMemcpyDefault, h);
}
cudaError_t gate_kernel(cudaStream_t h, void** args) {
  auto* signal = *static_cast<std::atomic<std::uint64_t>**>(args[0]);
  if (signal == nullptr) return cudaSuccess;  // nothing to do (host_gate::prepare)
  const std::uint64_t signal_value = *static_cast<unsigned long long*>(args[1]);
  auto* gate = *static_cast<std::atomic<std::uint64_t>**>(args[2]);
  const std::uint64_t gate_value = *static_cast<unsigned long long*>(args[3]);
  // A running kernel holds no hardware queue (SLUICE_SIM_HW_QUEUES): only its
  // own stream waits behind it (2x H100, sluice-probe-gates). CUPTI sees it as
  // a kernel, named as nvcc names it (2x H200: sluice's CUPTI source must drop it).
  const std::uint32_t c = sim_cupti::api_call(sim_cupti::cbid::launch_kernel);
  const auto on = stream_of(h);
  enqueue(h, [=, sid = on->id, device = on->device] {
    const std::uint64_t t0 = sim_cupti::now();
    signal->store(signal_value);
    while (gate->load() < gate_value) std::this_thread::sleep_for(std::chrono::microseconds(20));
    sim_cupti::ran(sim_cupti::activity::kernel, c, sid, device, t0, sim_cupti::now(), 0,
                   "_ZN12_GLOBAL__N_116sluice_host_gateEPVyyPVKyy");
  });
  return cudaSuccess;
}
}  // namespace fake
