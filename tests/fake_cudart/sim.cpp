// A simulated CUDA runtime (libcudart.so.<major>) for running sluice::cuda's
// code, the conformance suite included, in CI without a GPU
// (tests/fake_cudart/README.md). Unlike the stub (stub.cpp), work is asynchronous: every stream is
// a queue run in order by a thread of its own, events complete when their stream reaches them,
// stream waits block that stream's thread, stream memory waits poll host memory, host functions run
// on one shared callback thread (as CUDA's do) and hold their stream until they return, copies that
// touch memory the runtime did not allocate (pageable) return only once done, and cudaFreeHost
// waits for every device. It is a model of the documented CUDA behaviour sluice relies on, not
// CUDA: no priorities (every stream runs at once), no kernels, no faults.
//
// SLUICE_SIM_DEVICES=N (1..8, default 2): the number of devices.
#include "common.hpp"

#include <cuda.h>
#include <cuda_runtime_api.h>

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
#include <thread>
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
};

struct stream_model {
  int device = 0;
  std::deque<op> queue;  // under mu()
  std::uint64_t enqueued = 0, completed = 0;
  bool destroyed = false;
};

//! What a record captured: complete once its operation has run (then t_ns >= 0).
struct capture {
  std::atomic<std::int64_t> t_ns{-1};
};

struct event_model {
  int device = 0;
  bool timing = true;
  std::shared_ptr<capture> last;  // under mu(); null: never recorded
};

struct registry {
  std::vector<std::shared_ptr<stream_model>> streams;  // every live or draining stream
  std::map<std::uintptr_t, std::size_t> memory;        // what the runtime allocated
  bool peer_enabled[8][8] = {};
};
registry& reg() {
  static auto* r = new registry;
  return *r;
}

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(clock_type::now().time_since_epoch())
      .count();
}

void run_stream(std::shared_ptr<stream_model> s) {
  std::unique_lock<std::mutex> lock(mu());
  for (;;) {
    changed().wait(lock, [&] { return !s->queue.empty() || s->destroyed; });
    if (s->queue.empty()) break;  // destroyed and drained
    op o = std::move(s->queue.front());
    lock.unlock();
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

std::shared_ptr<stream_model> new_stream(int device) {
  auto s = std::make_shared<stream_model>();
  s->device = device;
  {
    std::lock_guard<std::mutex> lock(mu());
    reg().streams.push_back(s);
  }
  std::thread(run_stream, s).detach();
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
  if (!d) d = new_stream(current_device);
  return d;
}

//! Enqueues o on h's stream; returns the position it will complete at.
std::uint64_t enqueue(cudaStream_t h, std::function<void()> run,
                      std::shared_ptr<stream_model>* out = nullptr,
                      std::function<void()> finish = {}) {
  op o{std::move(run), std::move(finish)};
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  s->queue.push_back(std::move(o));
  const std::uint64_t at = ++s->enqueued;
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

bool runtime_memory(const void* p) {
  const auto x = reinterpret_cast<std::uintptr_t>(p);
  std::lock_guard<std::mutex> lock(mu());
  auto& m = reg().memory;
  auto it = m.upper_bound(x);
  if (it == m.begin()) return false;
  --it;
  return x < it->first + it->second;
}

void* allocate(std::size_t n) {
  void* p = std::aligned_alloc(256, (n + 255) / 256 * 256 + 256);
  if (p != nullptr) {
    std::lock_guard<std::mutex> lock(mu());
    reg().memory[reinterpret_cast<std::uintptr_t>(p)] = n == 0 ? 1 : n;
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
  enqueue(reinterpret_cast<cudaStream_t>(h), [word, value] {
    // The device polls host memory; so does the model.
    while (word->load() < value) std::this_thread::sleep_for(std::chrono::microseconds(20));
  });
  return CUDA_SUCCESS;
}

CUresult write_value64_impl(CUstream h, CUdeviceptr addr, cuuint64_t value, unsigned int) {
  auto* word = reinterpret_cast<std::atomic<std::uint64_t>*>(addr);
  enqueue(reinterpret_cast<cudaStream_t>(h), [word, value] { word->store(value); });
  return CUDA_SUCCESS;
}

}  // namespace

extern "C" {

cudaError_t cudaDeviceSynchronize() {
  const int d = current_device;
  wait_until([d] {
    for (const auto& s : reg().streams)
      if (s->device == d && s->completed < s->enqueued) return false;
    return true;
  });
  return cudaSuccess;
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* h, unsigned int, int) {
  *h = reinterpret_cast<cudaStream_t>(new stream_handle{new_stream(current_device)});
  return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t h) {
  // Returns at once; the stream's work still runs (the runtime's documented behaviour).
  auto* handle = reinterpret_cast<stream_handle*>(h);
  {
    std::lock_guard<std::mutex> lock(mu());
    handle->s->destroyed = true;
    changed().notify_all();
  }
  delete handle;
  return cudaSuccess;
}
cudaError_t cudaStreamQuery(cudaStream_t h) {
  auto s = stream_of(h);
  std::lock_guard<std::mutex> lock(mu());
  return s->completed == s->enqueued ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaStreamSynchronize(cudaStream_t h) {
  auto s = stream_of(h);
  std::uint64_t at = 0;
  {
    std::lock_guard<std::mutex> lock(mu());
    at = s->enqueued;
  }
  wait_for(s, at);
  return cudaSuccess;
}
cudaError_t cudaStreamWaitEvent(cudaStream_t h, cudaEvent_t e, unsigned int) {
  std::shared_ptr<capture> c;
  {
    std::lock_guard<std::mutex> lock(mu());
    c = reinterpret_cast<event_model*>(e)->last;
  }
  if (!c) return cudaSuccess;  // never recorded: nothing to wait for
  enqueue(h, [c] { wait_until([&] { return c->t_ns.load() >= 0; }); });
  return cudaSuccess;
}
cudaError_t cudaLaunchHostFunc(cudaStream_t h, cudaHostFn_t fn, void* data) {
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
  auto c = std::make_shared<capture>();
  {
    std::lock_guard<std::mutex> lock(mu());
    reinterpret_cast<event_model*>(e)->last = c;
  }
  enqueue(h, {}, nullptr, [c] { c->t_ns.store(now_ns()); });
  return cudaSuccess;
}
cudaError_t cudaEventQuery(cudaEvent_t e) {
  std::lock_guard<std::mutex> lock(mu());
  const auto& c = reinterpret_cast<event_model*>(e)->last;
  return !c || c->t_ns.load() >= 0 ? cudaSuccess : cudaErrorNotReady;
}
cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  std::shared_ptr<capture> c;
  {
    std::lock_guard<std::mutex> lock(mu());
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
  *ms = static_cast<float>(static_cast<double>(ty - tx) / 1e6);
  return cudaSuccess;
}

cudaError_t cudaMalloc(void** p, size_t n) {
  *p = allocate(n);
  return *p != nullptr ? cudaSuccess : failed(cudaErrorMemoryAllocation);
}
cudaError_t cudaFree(void* p) {
  release(p);
  return cudaSuccess;
}
cudaError_t cudaMemPoolCreate(cudaMemPool_t* pool, const cudaMemPoolProps*) {
  *pool = reinterpret_cast<cudaMemPool_t>(new int(current_device));
  return cudaSuccess;
}
cudaError_t cudaMemPoolSetAccess(cudaMemPool_t, const cudaMemAccessDesc*, size_t) {
  return cudaSuccess;
}
cudaError_t cudaMallocFromPoolAsync(void** p, size_t n, cudaMemPool_t, cudaStream_t) {
  return cudaMalloc(p, n);  // available at once: stream order is trivially kept
}
cudaError_t cudaFreeAsync(void* p, cudaStream_t h) {
  enqueue(h, [p] { release(p); });
  return cudaSuccess;
}
cudaError_t cudaHostAlloc(void** p, size_t n, unsigned int) { return cudaMalloc(p, n); }
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
  a->type = runtime_memory(p) ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
  return cudaSuccess;
}

namespace {
//! A copy that touches pageable memory returns once it is done (as CUDA's do).
cudaError_t copy(void* dst, const void* src, size_t n, cudaStream_t h) {
  std::shared_ptr<stream_model> s;
  const std::uint64_t at = enqueue(
      h, [=] { std::memcpy(dst, src, n); }, &s);
  if (!runtime_memory(dst) || !runtime_memory(src)) wait_for(s, at);
  return cudaSuccess;
}
}  // namespace

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t n, cudaMemcpyKind, cudaStream_t h) {
  return copy(dst, src, n, h);
}
cudaError_t cudaMemcpyPeerAsync(void* dst, int, const void* src, int, size_t n, cudaStream_t h) {
  return copy(dst, src, n, h);
}
cudaError_t cudaMemsetAsync(void* dst, int value, size_t n, cudaStream_t h) {
  enqueue(h, [=] { std::memset(dst, value, n); });
  return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int* can, int d, int peer) {
  if (!valid_device(d) || !valid_device(peer)) return failed(cudaErrorInvalidDevice);
  *can = d != peer ? 1 : 0;
  return cudaSuccess;
}
cudaError_t cudaDeviceEnablePeerAccess(int peer, unsigned int) {
  if (!valid_device(peer) || peer == current_device) return failed(cudaErrorInvalidDevice);
  std::lock_guard<std::mutex> lock(mu());
  bool& on = reg().peer_enabled[current_device][peer];
  if (on) return failed(cudaErrorPeerAccessAlreadyEnabled);  // as CUDA: an error, left as the last
  on = true;
  return cudaSuccess;
}
cudaError_t cudaDeviceGetP2PAttribute(int* v, cudaDeviceP2PAttr attr, int src, int dst) {
  if (!valid_device(src) || !valid_device(dst)) return failed(cudaErrorInvalidDevice);
  *v = attr == cudaDevP2PAttrPerformanceRank ? 0 : (src != dst ? 1 : 0);
  return cudaSuccess;
}

// What nvcc's host code calls for a program with device code (the conformance
// suite's ERR-2 fault kernel): registration does nothing; a launch fails.
void** __cudaRegisterFatBinary(void*) {
  static void* handle = nullptr;
  return &handle;
}
void __cudaRegisterFatBinaryEnd(void**) {}
void __cudaUnregisterFatBinary(void**) {}
void __cudaRegisterFunction(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*,
                            dim3*, int*) {}
unsigned __cudaPushCallConfiguration(dim3, dim3, size_t, CUstream_st*) { return 0; }
cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared, void* stream) {
  *grid = dim3();
  *block = dim3();
  *shared = 0;
  *static_cast<cudaStream_t*>(stream) = nullptr;
  return cudaSuccess;
}
cudaError_t __cudaGetKernel(cudaKernel_t* k, const void*) {
  *k = nullptr;
  return cudaSuccess;
}
cudaError_t __cudaLaunchKernel(cudaKernel_t, dim3, dim3, void**, size_t, cudaStream_t) {
  return failed(cudaErrorNotSupported);
}

}  // extern "C"

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
}  // namespace fake
