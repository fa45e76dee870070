// sluice-probe-capture: raw CUDA runtime and driver API only (no sluice code).
// What CUDA's stream capture does with each kind of call that sluice makes, as
// evidence for building native CUDA graphs from sluice's operations. Each case
// runs in a fresh stream and a fresh capture and prints one line:
//
//   case      the call(s) probed;            mode     the capture mode;
//   call      each call's return code;       status   the capture status right after it;
//   end       cudaStreamEndCapture's code and whether a graph came back;
//   nodes     the graph's node types, in cudaGraphGetNodes order; edges by those indices;
//   at_call   what host-visible memory holds right after the call, before EndCapture;
//   before    what the target holds after EndCapture, before any launch;
//   launch    cudaGraphInstantiate / cudaGraphLaunch / sync codes, and `after`, the
//             target after the launch; `extra`, what the case checks besides.
//
// Cases: copies (1D, 2D, 3D face, pinned and pageable), memsets (runtime and
// driver), kernels, a same-device peer copy, event records and waits (inside
// and outside the capture, external flags), fork/join (joined and not),
// stream memory operations, host functions, allocations, calls illegal during
// capture (each mode), hand-made nodes through cudaStreamGetCaptureInfo and
// cudaStreamUpdateCaptureDependencies, one graph exec launched on two streams
// at once, the host cost of a 64-kernel graph against 64 eager launches, and
// the launch cost of the shapes of graph that hold such a chain.
// A failing case does not stop the others; a sticky (context) error does.
//
// Built with -DSLUICE_BUILD_PROBES=ON (bench/probes/CMakeLists.txt) as
// sluice-probe-capture; scripts/gpu-check step capture runs it. Alone:
//   nvcc -std=c++17 -O2 -arch=sm_90 bench/probes/capture_probe.cu -o capture_probe -lcuda
#include <cuda.h>
#include <cuda_runtime.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

constexpr int kN = 1024;  // ints per buffer
constexpr size_t kBytes = kN * sizeof(int);
constexpr int kD = 16;  // edge of the 3D box (kD^3 ints)

// ---------------------------------------------------------------- kernels

__global__ void fill_kernel(int* p, int n, int v) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] = v;
}
__global__ void add_kernel(int* p, int n, int v) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] += v;
}
__global__ void mul_kernel(int* p, int n, int v) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) p[i] *= v;
}
__global__ void iota_kernel(int* p, int n) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x)
    p[i] = i + 1;
}
__global__ void inc_kernel(int* p) { ++*p; }

__device__ unsigned long long global_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// One thread: takes a slot from *counter, spins `ns`, stores its start and end
// (globaltimer) in the slot, so two runs' overlap shows in their stamps.
__global__ void spin_kernel(unsigned long long* stamps, int* counter, unsigned long long ns) {
  const int slot = atomicAdd(counter, 1);
  const unsigned long long t0 = global_ns();
  while (global_ns() - t0 < ns) {
  }
  const unsigned long long t1 = global_ns();
  if (slot < 4) {
    stamps[2 * slot] = t0;
    stamps[2 * slot + 1] = t1;
  }
}

// ---------------------------------------------------------------- helpers

const char* err(cudaError_t e) { return cudaGetErrorName(e); }
const char* cuerr(CUresult r) {
  const char* s = nullptr;
  cuGetErrorName(r, &s);
  return s != nullptr ? s : "CUDA_ERROR_?";
}
std::string rc(const char* call, cudaError_t e) { return std::string(call) + "=" + err(e); }
std::string rcu(const char* call, CUresult r) { return std::string(call) + "=" + cuerr(r); }
std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}
long tid() { return static_cast<long>(syscall(SYS_gettid)); }
const char* mode_name(cudaStreamCaptureMode m) {
  switch (m) {
    case cudaStreamCaptureModeGlobal: return "global";
    case cudaStreamCaptureModeThreadLocal: return "threadlocal";
    case cudaStreamCaptureModeRelaxed: return "relaxed";
  }
  return "?";
}
const cudaStreamCaptureMode kModes[] = {
    cudaStreamCaptureModeGlobal, cudaStreamCaptureModeThreadLocal, cudaStreamCaptureModeRelaxed};

// Capture status of s: cudaStreamIsCapturing, and cudaStreamGetCaptureInfo's id
// and number of dependencies while active.
std::string capture_status(cudaStream_t s) {
  cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
  const cudaError_t e = cudaStreamIsCapturing(s, &st);
  if (e != cudaSuccess) return std::string("IsCapturing:") + err(e);
  const char* name = st == cudaStreamCaptureStatusNone     ? "none"
                     : st == cudaStreamCaptureStatusActive ? "active"
                                                           : "invalidated";
  cudaStreamCaptureStatus st2 = cudaStreamCaptureStatusNone;
  unsigned long long id = 0;
  const cudaGraphNode_t* deps = nullptr;
  size_t ndeps = 0;
  const cudaError_t e2 = cudaStreamGetCaptureInfo(s, &st2, &id, nullptr, &deps, nullptr, &ndeps);
  if (e2 != cudaSuccess) return fmt("%s(GetCaptureInfo:%s)", name, err(e2));
  if (st2 == cudaStreamCaptureStatusActive) return fmt("%s(id=%llu,deps=%zu)", name, id, ndeps);
  return name;
}

const char* node_type_name(cudaGraphNode_t n) {
  // The driver's enum also names the batch memory operation node.
  CUgraphNodeType t{};
  if (cuGraphNodeGetType(reinterpret_cast<CUgraphNode>(n), &t) != CUDA_SUCCESS) return "?";
  switch (t) {
    case CU_GRAPH_NODE_TYPE_KERNEL: return "kernel";
    case CU_GRAPH_NODE_TYPE_MEMCPY: return "memcpy";
    case CU_GRAPH_NODE_TYPE_MEMSET: return "memset";
    case CU_GRAPH_NODE_TYPE_HOST: return "host";
    case CU_GRAPH_NODE_TYPE_GRAPH: return "graph";
    case CU_GRAPH_NODE_TYPE_EMPTY: return "empty";
    case CU_GRAPH_NODE_TYPE_WAIT_EVENT: return "wait_event";
    case CU_GRAPH_NODE_TYPE_EVENT_RECORD: return "event_record";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_SIGNAL: return "ext_sem_signal";
    case CU_GRAPH_NODE_TYPE_EXT_SEMAS_WAIT: return "ext_sem_wait";
    case CU_GRAPH_NODE_TYPE_MEM_ALLOC: return "mem_alloc";
    case CU_GRAPH_NODE_TYPE_MEM_FREE: return "mem_free";
    case CU_GRAPH_NODE_TYPE_BATCH_MEM_OP: return "batch_mem_op";
    case CU_GRAPH_NODE_TYPE_CONDITIONAL: return "conditional";
    default: return "other";
  }
}

// "nodes=[a,b] edges=[0>1]" (indices in cudaGraphGetNodes order).
std::string describe_graph(cudaGraph_t g) {
  size_t n = 0;
  cudaError_t e = cudaGraphGetNodes(g, nullptr, &n);
  if (e != cudaSuccess) return std::string("nodes=") + err(e);
  std::vector<cudaGraphNode_t> nodes(n);
  if (n > 0) cudaGraphGetNodes(g, nodes.data(), &n);
  std::string out = "nodes=[";
  for (size_t i = 0; i < n; ++i) out += std::string(i ? "," : "") + node_type_name(nodes[i]);
  out += "]";
  size_t ne = 0;
  e = cudaGraphGetEdges(g, nullptr, nullptr, nullptr, &ne);
  if (e != cudaSuccess) return out + " edges=" + err(e);
  std::vector<cudaGraphNode_t> from(ne), to(ne);
  if (ne > 0) cudaGraphGetEdges(g, from.data(), to.data(), nullptr, &ne);
  auto index = [&](cudaGraphNode_t x) {
    return static_cast<int>(std::find(nodes.begin(), nodes.end(), x) - nodes.begin());
  };
  out += " edges=[";
  for (size_t i = 0; i < ne; ++i) out += fmt("%s%d>%d", i ? "," : "", index(from[i]), index(to[i]));
  return out + "]";
}

// ---------------------------------------------------------------- shared state

cudaStream_t helper;  // never captures: setup and reads of device memory
int* d_a;
int* d_b;
int* d_c;
int* d3_src;
int* d3_dst;
int* pin_src;  // pinned, mapped
int* pin_dst;
int* pin_dst_dev;  // pin_dst's device pointer
std::uint64_t*
    pin_words;  // [0] 32-bit target, [1] 64-bit target, [2] flag (32-bit), [3] batch target
CUdeviceptr words_dev;
int* scratch;  // pinned, for reads of device memory
std::vector<int> pageable(kN);
std::atomic<int> deadline_case{0};
std::atomic<const char*> current_case{"start"};

void dev_fill(int* p, int n, int v) {
  fill_kernel<<<8, 256, 0, helper>>>(p, n, v);
  cudaStreamSynchronize(helper);
}
void dev_iota(int* p, int n) {
  iota_kernel<<<8, 256, 0, helper>>>(p, n);
  cudaStreamSynchronize(helper);
}
void host_fill(int* p, int n, int v) {
  for (int i = 0; i < n; ++i) reinterpret_cast<volatile int*>(p)[i] = v;
}
// "v" when the first and last ints agree, else "first/last"; hex when large.
std::string show(int first, int last) {
  auto one = [](int x) {
    return (x > 100000 || x < -100000) ? fmt("0x%08x", static_cast<unsigned>(x)) : fmt("%d", x);
  };
  return first == last ? one(first) : one(first) + "/" + one(last);
}
std::string host_val(const int* p, int n = kN) {
  const volatile int* v = p;
  return show(v[0], v[n - 1]);
}
std::string dev_val(const int* p, int n = kN) {
  const cudaError_t e1 = cudaMemcpyAsync(scratch, p, sizeof(int), cudaMemcpyDeviceToHost, helper);
  const cudaError_t e2 =
      cudaMemcpyAsync(scratch + 1, p + n - 1, sizeof(int), cudaMemcpyDeviceToHost, helper);
  const cudaError_t e3 = cudaStreamSynchronize(helper);
  if (e1 != cudaSuccess || e2 != cudaSuccess || e3 != cudaSuccess)
    return std::string("read:") + err(e1 != cudaSuccess ? e1 : e2 != cudaSuccess ? e2 : e3);
  return show(scratch[0], scratch[1]);
}
// Compares n device ints with expect(i): "done", "untouched" (all still
// `untouched`), or "wrong(at i: got)".
std::string dev_check(const int* p, int n, const std::function<int(int)>& expect, int untouched) {
  std::vector<int> h(static_cast<size_t>(n));
  cudaMemcpyAsync(h.data(), p, n * sizeof(int), cudaMemcpyDeviceToHost, helper);
  const cudaError_t e = cudaStreamSynchronize(helper);
  if (e != cudaSuccess) return std::string("read:") + err(e);
  bool all_untouched = true;
  int first_bad = -1;
  for (int i = 0; i < n; ++i) {
    if (h[i] != untouched) all_untouched = false;
    if (h[i] != expect(i) && first_bad < 0) first_bad = i;
  }
  if (first_bad < 0) return "done";
  if (all_untouched) return "untouched";
  return fmt("wrong(at %d: %d)", first_bad, h[first_bad]);
}

// ---------------------------------------------------------------- the runner

struct Probe {
  std::string call;                           // calls and return codes
  std::string at_call;                        // host-visible target right after the call
  std::function<std::string()> effect;        // the target's state (before and after launch)
  std::function<std::string()> after_end;     // more checks after EndCapture, before launch
  std::function<std::string()> after_launch;  // more checks after launch and sync
  std::function<void()> cleanup;
};
using Body = std::function<Probe(cudaStream_t)>;

void health_check(const char* name) {
  const cudaError_t e = cudaDeviceSynchronize();
  cudaGetLastError();
  if (e == cudaSuccess) return;
  const cudaError_t e2 = cudaDeviceSynchronize();
  if (e2 != cudaSuccess) {
    std::printf("POISONED after %s: cudaDeviceSynchronize=%s twice; stopping\n", name, err(e2));
    std::fflush(stdout);
    std::exit(2);
  }
  std::printf("  note: after %s cudaDeviceSynchronize=%s once, then cudaSuccess\n", name, err(e));
}

void run_case(const char* name, cudaStreamCaptureMode mode, const std::function<void()>& setup,
              const Body& body, unsigned stream_flags = cudaStreamNonBlocking) {
  current_case = name;
  deadline_case.fetch_add(1);
  cudaGetLastError();
  if (setup) setup();
  cudaStream_t s = nullptr;
  cudaError_t e = cudaStreamCreateWithFlags(&s, stream_flags);
  if (e != cudaSuccess) {
    std::printf("case=%s mode=%s  stream:%s\n", name, mode_name(mode), err(e));
    health_check(name);
    return;
  }
  std::string line = fmt("case=%s  mode=%s", name, mode_name(mode));
  e = cudaStreamBeginCapture(s, mode);
  if (e != cudaSuccess) line += std::string("  BeginCapture=") + err(e);
  Probe p = body(s);
  line += "  call: " + p.call;
  line += "  status=" + capture_status(s);
  if (!p.at_call.empty()) line += "  at_call=" + p.at_call;
  cudaGraph_t g = nullptr;
  e = cudaStreamEndCapture(s, &g);
  line += fmt("  end=%s graph=%s", err(e), g ? "yes" : "null");
  if (g) line += "  " + describe_graph(g);
  if (p.effect) line += "  before=" + p.effect();
  if (p.after_end) line += "  " + p.after_end();
  if (g) {
    cudaGraphExec_t x = nullptr;
    const cudaError_t ei = cudaGraphInstantiate(&x, g, 0);
    line += std::string("  launch: inst=") + err(ei);
    if (ei == cudaSuccess) {
      const cudaError_t el = cudaGraphLaunch(x, s);
      const cudaError_t es = cudaStreamSynchronize(s);
      line += fmt(" launch=%s sync=%s", err(el), err(es));
      if (p.effect) line += "  after=" + p.effect();
      if (p.after_launch) line += "  " + p.after_launch();
      cudaGraphExecDestroy(x);
    }
    cudaGraphDestroy(g);
  }
  std::printf("%s\n", line.c_str());
  std::fflush(stdout);
  cudaGetLastError();
  if (p.cleanup) p.cleanup();
  cudaStreamDestroy(s);
  health_check(name);
}

void fill_on(cudaStream_t s, int* p, int v) { fill_kernel<<<4, 256, 0, s>>>(p, kN, v); }

// ---------------------------------------------------------------- cases

void copies() {
  run_case(
      "memcpy_d2d", cudaStreamCaptureModeGlobal,
      [] {
        dev_fill(d_a, kN, 7);
        dev_fill(d_b, kN, 0);
      },
      [](cudaStream_t s) {
        Probe p;
        p.call = rc("cudaMemcpyAsync", cudaMemcpyAsync(d_b, d_a, kBytes, cudaMemcpyDefault, s));
        p.effect = [] { return dev_val(d_b); };
        return p;
      });
  // The source changes to 9 after EndCapture: 9 after the launch means the
  // node reads the source at launch, 8 that it kept what was there at capture.
  for (const bool pinned : {true, false}) {
    for (cudaStreamCaptureMode m : kModes) {
      if (pinned && m != cudaStreamCaptureModeGlobal) continue;
      int* src = pinned ? pin_src : pageable.data();
      run_case(
          pinned ? "memcpy_h2d_pinned" : "memcpy_h2d_pageable", m,
          [src] {
            host_fill(src, kN, 8);
            dev_fill(d_b, kN, 0);
          },
          [src](cudaStream_t s) {
            Probe p;
            p.call =
                rc("cudaMemcpyAsync", cudaMemcpyAsync(d_b, src, kBytes, cudaMemcpyHostToDevice, s));
            p.effect = [] { return dev_val(d_b); };
            p.after_end = [src] {
              host_fill(src, kN, 9);
              return std::string("extra: src set to 9 after end");
            };
            return p;
          });
    }
  }
  for (const bool pinned : {true, false}) {
    for (cudaStreamCaptureMode m : kModes) {
      if (pinned && m != cudaStreamCaptureModeGlobal) continue;
      int* dst = pinned ? pin_dst : pageable.data();
      run_case(
          pinned ? "memcpy_d2h_pinned" : "memcpy_d2h_pageable", m,
          [dst] {
            dev_fill(d_a, kN, 10);
            host_fill(dst, kN, 0);
          },
          [dst](cudaStream_t s) {
            Probe p;
            p.call =
                rc("cudaMemcpyAsync", cudaMemcpyAsync(dst, d_a, kBytes, cudaMemcpyDeviceToHost, s));
            p.at_call = host_val(dst);
            p.effect = [dst] { return host_val(dst); };
            return p;
          });
    }
  }
  // 2D: 8 of every 32 ints (rows of 128 bytes) from d_a into d_b.
  run_case(
      "memcpy2d_d2d", cudaStreamCaptureModeGlobal,
      [] {
        dev_iota(d_a, kN);
        dev_fill(d_b, kN, 0);
      },
      [](cudaStream_t s) {
        Probe p;
        p.call = rc("cudaMemcpy2DAsync",
                    cudaMemcpy2DAsync(d_b, 32 * sizeof(int), d_a, 32 * sizeof(int), 8 * sizeof(int),
                                      32, cudaMemcpyDeviceToDevice, s));
        p.effect = [] {
          return dev_check(
              d_b, kN, [](int i) { return i % 32 < 8 ? i + 1 : 0; }, 0);
        };
        return p;
      });
  // 3D: the x = 0 face of a 16^3 box of ints (one int per row: strided).
  run_case(
      "memcpy3d_face", cudaStreamCaptureModeGlobal,
      [] {
        dev_iota(d3_src, kD * kD * kD);
        dev_fill(d3_dst, kD * kD * kD, 0);
      },
      [](cudaStream_t s) {
        cudaMemcpy3DParms q{};
        q.srcPtr = make_cudaPitchedPtr(d3_src, kD * sizeof(int), kD, kD);
        q.dstPtr = make_cudaPitchedPtr(d3_dst, kD * sizeof(int), kD, kD);
        q.extent = make_cudaExtent(sizeof(int), kD, kD);
        q.kind = cudaMemcpyDeviceToDevice;
        Probe p;
        p.call = rc("cudaMemcpy3DAsync", cudaMemcpy3DAsync(&q, s));
        p.effect = [] {
          return dev_check(
              d3_dst, kD * kD * kD, [](int i) { return i % kD == 0 ? i + 1 : 0; }, 0);
        };
        return p;
      });
}

void memsets() {
  run_case(
      "memset_dev", cudaStreamCaptureModeGlobal, [] { dev_fill(d_b, kN, 0); },
      [](cudaStream_t s) {
        Probe p;
        p.call = rc("cudaMemsetAsync", cudaMemsetAsync(d_b, 0x5a, kBytes, s));
        p.effect = [] { return dev_val(d_b); };
        return p;
      });
  run_case(
      "memset_pinned", cudaStreamCaptureModeGlobal, [] { host_fill(pin_dst, kN, 0); },
      [](cudaStream_t s) {
        Probe p;
        p.call = rc("cudaMemsetAsync", cudaMemsetAsync(pin_dst_dev, 0x5a, kBytes, s));
        p.at_call = host_val(pin_dst);
        p.effect = [] { return host_val(pin_dst); };
        return p;
      });
  run_case(
      "memsetD32_dev", cudaStreamCaptureModeGlobal, [] { dev_fill(d_b, kN, 0); },
      [](cudaStream_t s) {
        Probe p;
        p.call = rcu("cuMemsetD32Async",
                     cuMemsetD32Async(reinterpret_cast<CUdeviceptr>(d_b), 0x12345678u, kN,
                                      reinterpret_cast<CUstream>(s)));
        p.effect = [] { return dev_val(d_b); };
        return p;
      });
}

void kernels() {
  // Into pinned memory through its device pointer, so the host sees a write
  // at capture time if there were one.
  run_case(
      "kernel_chevrons", cudaStreamCaptureModeGlobal, [] { host_fill(pin_dst, kN, 0); },
      [](cudaStream_t s) {
        fill_kernel<<<4, 256, 0, s>>>(pin_dst_dev, kN, 42);
        Probe p;
        p.call = rc("<<<>>>+cudaGetLastError", cudaGetLastError());
        p.at_call = host_val(pin_dst);
        p.effect = [] { return host_val(pin_dst); };
        return p;
      });
  run_case(
      "kernel_cudaLaunchKernel", cudaStreamCaptureModeGlobal, [] { host_fill(pin_dst, kN, 0); },
      [](cudaStream_t s) {
        int* ptr = pin_dst_dev;
        int n = kN;
        int v = 43;
        void* args[] = {&ptr, &n, &v};
        Probe p;
        p.call = rc("cudaLaunchKernel", cudaLaunchKernel(reinterpret_cast<const void*>(fill_kernel),
                                                         dim3(4), dim3(256), args, 0, s));
        p.at_call = host_val(pin_dst);
        p.effect = [] { return host_val(pin_dst); };
        return p;
      });
}

void peer() {
  int count = 0;
  cudaGetDeviceCount(&count);
  run_case(
      "memcpy_peer_dev0_dev0", cudaStreamCaptureModeGlobal,
      [] {
        dev_fill(d_a, kN, 12);
        dev_fill(d_b, kN, 0);
      },
      [count](cudaStream_t s) {
        Probe p;
        p.call = rc("cudaMemcpyPeerAsync", cudaMemcpyPeerAsync(d_b, 0, d_a, 0, kBytes, s)) +
                 fmt(" (device_count=%d)", count);
        p.effect = [] { return dev_val(d_b); };
        return p;
      });
}

// An event recorded inside the capture, then used outside it (after
// EndCapture and after the launch).
void event_records() {
  struct Variant {
    const char* name;
    bool external;
    bool prerecorded;  // recorded and completed outside before the capture
  };
  for (const Variant v : {Variant{"event_record_fresh", false, false},
                          Variant{"event_record_prerecorded", false, true},
                          Variant{"event_record_external", true, false},
                          Variant{"event_record_external_prerecorded", true, true}}) {
    static cudaEvent_t ev;
    static cudaStream_t other;
    run_case(
        v.name, cudaStreamCaptureModeGlobal,
        [v] {
          cudaEventCreate(&ev);
          cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
          dev_fill(d_b, kN, 0);
          if (v.prerecorded) {
            cudaEventRecord(ev, other);
            cudaStreamSynchronize(other);
          }
        },
        [v](cudaStream_t s) {
          fill_on(s, d_b, 5);
          Probe p;
          p.call = v.external ? rc("cudaEventRecordWithFlags(External)",
                                   cudaEventRecordWithFlags(ev, s, cudaEventRecordExternal))
                              : rc("cudaEventRecord", cudaEventRecord(ev, s));
          p.effect = [] { return dev_val(d_b); };
          auto outside = [] {
            const cudaError_t q = cudaEventQuery(ev);
            const cudaError_t y = cudaEventSynchronize(ev);
            const cudaError_t w = cudaStreamWaitEvent(other, ev, 0);
            const cudaError_t ws = cudaStreamSynchronize(other);
            return fmt("EventQuery=%s EventSynchronize=%s other.WaitEvent=%s other.sync=%s", err(q),
                       err(y), err(w), err(ws));
          };
          p.after_end = [outside] { return "extra(after end): " + outside(); };
          p.after_launch = [outside] { return "extra(after launch): " + outside(); };
          p.cleanup = [] {
            cudaEventDestroy(ev);
            cudaStreamDestroy(other);
          };
          return p;
        });
  }
}

// A wait in the capture on an event recorded outside it.
void outside_waits() {
  for (const bool external : {false, true}) {
    static cudaEvent_t ev;
    static cudaStream_t other;
    run_case(
        external ? "wait_outside_event_external" : "wait_outside_event_default",
        cudaStreamCaptureModeGlobal,
        [] {
          cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
          cudaStreamCreateWithFlags(&other, cudaStreamNonBlocking);
          dev_fill(d_b, kN, 0);
          fill_on(other, d_c, 1);
          cudaEventRecord(ev, other);
          cudaStreamSynchronize(other);
        },
        [external](cudaStream_t s) {
          Probe p;
          p.call = rc(external ? "cudaStreamWaitEvent(External)" : "cudaStreamWaitEvent",
                      cudaStreamWaitEvent(s, ev, external ? cudaEventWaitExternal : 0));
          p.call += " then " + capture_status(s);
          fill_on(s, d_b, 6);
          p.call += " " + rc("kernel", cudaGetLastError());
          p.effect = [] { return dev_val(d_b); };
          p.cleanup = [] {
            cudaEventDestroy(ev);
            cudaStreamDestroy(other);
          };
          return p;
        });
  }
}

void fork_join() {
  for (const bool joined : {true, false}) {
    static cudaStream_t s2;
    static cudaEvent_t fork_ev;
    static cudaEvent_t join_ev;
    run_case(
        joined ? "fork_join" : "fork_unjoined", cudaStreamCaptureModeGlobal,
        [] {
          cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
          cudaEventCreateWithFlags(&fork_ev, cudaEventDisableTiming);
          cudaEventCreateWithFlags(&join_ev, cudaEventDisableTiming);
          dev_fill(d_a, kN, 0);
          dev_fill(d_b, kN, 0);
        },
        [joined](cudaStream_t s) {
          Probe p;
          p.call = rc("EventRecord(s)", cudaEventRecord(fork_ev, s));
          p.call += " " + rc("s2.WaitEvent", cudaStreamWaitEvent(s2, fork_ev, 0));
          p.call += " s2.status=" + capture_status(s2);
          fill_on(s2, d_b, 2);
          fill_on(s, d_a, 1);
          if (joined) {
            p.call += " " + rc("EventRecord(s2)", cudaEventRecord(join_ev, s2));
            p.call += " " + rc("s.WaitEvent", cudaStreamWaitEvent(s, join_ev, 0));
          }
          p.effect = [] { return "a=" + dev_val(d_a) + ",b=" + dev_val(d_b); };
          p.after_end = [] {
            std::string out = "extra: s2 after end=" + capture_status(s2);
            cudaGraph_t g2 = nullptr;
            cudaStreamCaptureStatus st = cudaStreamCaptureStatusNone;
            cudaStreamIsCapturing(s2, &st);
            if (st != cudaStreamCaptureStatusNone) {
              const cudaError_t e = cudaStreamEndCapture(s2, &g2);
              out += fmt(" s2.EndCapture=%s graph=%s s2 then=%s", err(e), g2 ? "yes" : "null",
                         capture_status(s2).c_str());
              if (g2) cudaGraphDestroy(g2);
            }
            return out;
          };
          p.cleanup = [] {
            cudaStreamDestroy(s2);
            cudaEventDestroy(fork_ev);
            cudaEventDestroy(join_ev);
          };
          return p;
        });
  }
}

void memops() {
  int v64 = 0;
  int nor = 0;
  CUdevice dev = 0;
  cuDeviceGet(&dev, 0);
  cuDeviceGetAttribute(&v64, CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS, dev);
  cuDeviceGetAttribute(&nor, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR, dev);
  std::printf("stream memory operations: 64-bit=%d wait_nor=%d\n", v64, nor);
  volatile std::uint64_t* w = pin_words;
  auto word32 = [](int i) {
    return fmt("0x%x", static_cast<unsigned>(reinterpret_cast<volatile std::uint32_t*>(
                           const_cast<std::uint64_t*>(pin_words) + i)[0]));
  };
  run_case(
      "memop_write32_pinned", cudaStreamCaptureModeGlobal, [w] { w[0] = 0; },
      [word32](cudaStream_t s) {
        Probe p;
        p.call = rcu("cuStreamWriteValue32",
                     cuStreamWriteValue32(reinterpret_cast<CUstream>(s), words_dev, 0xabc, 0));
        p.at_call = word32(0);
        p.effect = [word32] { return word32(0); };
        return p;
      });
  run_case(
      "memop_write64_pinned", cudaStreamCaptureModeGlobal, [w] { w[1] = 0; },
      [w](cudaStream_t s) {
        Probe p;
        p.call = rcu("cuStreamWriteValue64",
                     cuStreamWriteValue64(reinterpret_cast<CUstream>(s), words_dev + 8,
                                          0x1122334455667788ull, 0));
        p.at_call = fmt("0x%llx", static_cast<unsigned long long>(w[1]));
        p.effect = [w] { return fmt("0x%llx", static_cast<unsigned long long>(w[1])); };
        return p;
      });
  run_case(
      "memop_write32_device", cudaStreamCaptureModeGlobal, [] { dev_fill(d_b, kN, 0); },
      [](cudaStream_t s) {
        Probe p;
        p.call = rcu("cuStreamWriteValue32",
                     cuStreamWriteValue32(reinterpret_cast<CUstream>(s),
                                          reinterpret_cast<CUdeviceptr>(d_b), 0xabc, 0));
        p.effect = [] { return dev_val(d_b, 1); };
        return p;
      });
  // The flag is 1 before the capture and stays 1: a captured wait is
  // satisfied at launch (no hang), then the kernel behind it writes 8.
  run_case(
      "memop_wait32_pinned", cudaStreamCaptureModeGlobal,
      [w] {
        w[2] = 1;
        dev_fill(d_b, kN, 0);
      },
      [](cudaStream_t s) {
        Probe p;
        p.call = rcu("cuStreamWaitValue32(GEQ 1, satisfied)",
                     cuStreamWaitValue32(reinterpret_cast<CUstream>(s), words_dev + 16, 1,
                                         CU_STREAM_WAIT_VALUE_GEQ));
        fill_on(s, d_b, 8);
        p.effect = [] { return dev_val(d_b); };
        return p;
      });
  run_case(
      "memop_batch_write32_wait32", cudaStreamCaptureModeGlobal,
      [w] {
        w[2] = 1;
        w[3] = 0;
      },
      [word32](cudaStream_t s) {
        CUstreamBatchMemOpParams ops[2];
        std::memset(ops, 0, sizeof ops);
        ops[0].writeValue.operation = CU_STREAM_MEM_OP_WRITE_VALUE_32;
        ops[0].writeValue.address = words_dev + 24;
        ops[0].writeValue.value = 0x77;
        ops[0].writeValue.flags = 0;
        ops[1].waitValue.operation = CU_STREAM_MEM_OP_WAIT_VALUE_32;
        ops[1].waitValue.address = words_dev + 16;
        ops[1].waitValue.value = 1;
        ops[1].waitValue.flags = CU_STREAM_WAIT_VALUE_GEQ;
        Probe p;
        p.call =
            rcu("cuStreamBatchMemOp", cuStreamBatchMemOp(reinterpret_cast<CUstream>(s), 2, ops, 0));
        p.at_call = word32(3);
        p.effect = [word32] { return word32(3); };
        return p;
      });
}

struct HostRecord {
  std::atomic<int> calls{0};
  std::atomic<long> thread{0};
};
HostRecord host_record;

void CUDART_CB host_fn(void* arg) {
  auto* r = static_cast<HostRecord*>(arg);
  r->thread = tid();
  r->calls.fetch_add(1);
}
void CUDART_CB stream_cb(cudaStream_t, cudaError_t, void* arg) { host_fn(arg); }

void host_functions() {
  for (const bool callback : {false, true}) {
    run_case(
        callback ? "stream_add_callback" : "launch_host_func", cudaStreamCaptureModeGlobal,
        [] {
          host_record.calls = 0;
          host_record.thread = 0;
        },
        [callback](cudaStream_t s) {
          Probe p;
          p.call = callback
                       ? rc("cudaStreamAddCallback",
                            cudaStreamAddCallback(s, stream_cb, &host_record, 0))
                       : rc("cudaLaunchHostFunc", cudaLaunchHostFunc(s, host_fn, &host_record));
          p.at_call = fmt("calls=%d", host_record.calls.load());
          p.effect = [] { return fmt("calls=%d", host_record.calls.load()); };
          p.after_launch = [] {
            const long t = host_record.thread.load();
            return fmt("extra: callback tid=%ld main tid=%ld (%s)", t, tid(),
                       t == 0       ? "not run"
                       : t == tid() ? "main thread"
                                    : "another thread");
          };
          return p;
        });
  }
}

void allocations() {
  for (cudaStreamCaptureMode m : kModes) {
    run_case(
        "mallocasync_freeasync", m, [] { dev_fill(d_b, kN, 0); },
        [](cudaStream_t s) {
          void* q = nullptr;
          Probe p;
          p.call = rc("cudaMallocAsync", cudaMallocAsync(&q, kBytes, s));
          p.call += fmt("(ptr %s)", q ? "set" : "null");
          fill_on(s, static_cast<int*>(q), 11);
          p.call += " " + rc("kernel", cudaGetLastError());
          p.call += " " + rc("cudaMemcpyAsync",
                             cudaMemcpyAsync(d_b, q, kBytes, cudaMemcpyDeviceToDevice, s));
          p.call += " " + rc("cudaFreeAsync", cudaFreeAsync(q, s));
          p.effect = [] { return dev_val(d_b); };
          return p;
        });
    static void* unfreed;
    run_case(
        "mallocasync_unfreed", m, [] { dev_fill(d_b, kN, 0); },
        [](cudaStream_t s) {
          unfreed = nullptr;
          Probe p;
          p.call = rc("cudaMallocAsync", cudaMallocAsync(&unfreed, kBytes, s));
          fill_on(s, static_cast<int*>(unfreed), 13);
          p.call += " " + rc("cudaMemcpyAsync",
                             cudaMemcpyAsync(d_b, unfreed, kBytes, cudaMemcpyDeviceToDevice, s));
          p.effect = [] { return dev_val(d_b); };
          p.after_launch = [] {
            return std::string("extra: cudaFree after launch=") + err(cudaFree(unfreed));
          };
          return p;
        });
    static void* q;
    run_case("cudaMalloc", m, nullptr, [](cudaStream_t s) {
      fill_on(s, d_b, 1);
      q = nullptr;
      Probe p;
      p.call = rc("cudaMalloc", cudaMalloc(&q, kBytes));
      p.cleanup = [] {
        if (q) cudaFree(q);
      };
      return p;
    });
    run_case(
        "cudaFree", m, [] { cudaMalloc(&q, kBytes); },
        [](cudaStream_t s) {
          fill_on(s, d_b, 1);
          Probe p;
          const cudaError_t e = cudaFree(q);
          p.call = rc("cudaFree", e);
          if (e == cudaSuccess) q = nullptr;
          p.cleanup = [] {
            if (q) cudaFree(q);
          };
          return p;
        });
    static void* h;
    run_case("cudaMallocHost", m, nullptr, [](cudaStream_t s) {
      fill_on(s, d_b, 1);
      h = nullptr;
      Probe p;
      p.call = rc("cudaMallocHost", cudaMallocHost(&h, 4096));
      p.cleanup = [] {
        if (h) cudaFreeHost(h);
      };
      return p;
    });
    // The modes differ in what OTHER threads may do while this one captures.
    run_case("other_thread_cudaMalloc", m, nullptr, [](cudaStream_t s) {
      fill_on(s, d_b, 1);
      q = nullptr;
      cudaError_t e = cudaSuccess;
      std::thread t([&] { e = cudaMalloc(&q, kBytes); });
      t.join();
      Probe p;
      p.call = rc("cudaMalloc(other thread)", e);
      p.cleanup = [] {
        if (q) cudaFree(q);
      };
      return p;
    });
  }
}

void illegal_calls() {
  static cudaEvent_t ev;
  for (cudaStreamCaptureMode m : kModes) {
    run_case("cudaStreamQuery", m, nullptr, [](cudaStream_t s) {
      fill_on(s, d_b, 1);
      Probe p;
      p.call = rc("cudaStreamQuery", cudaStreamQuery(s));
      return p;
    });
    run_case("cudaStreamSynchronize", m, nullptr, [](cudaStream_t s) {
      fill_on(s, d_b, 1);
      Probe p;
      p.call = rc("cudaStreamSynchronize", cudaStreamSynchronize(s));
      return p;
    });
    for (const bool sync : {false, true}) {
      run_case(
          sync ? "cudaEventSynchronize_captured" : "cudaEventQuery_captured", m,
          [] { cudaEventCreateWithFlags(&ev, cudaEventDisableTiming); },
          [sync](cudaStream_t s) {
            fill_on(s, d_b, 1);
            Probe p;
            p.call = rc("cudaEventRecord", cudaEventRecord(ev, s));
            p.call += " " + (sync ? rc("cudaEventSynchronize", cudaEventSynchronize(ev))
                                  : rc("cudaEventQuery", cudaEventQuery(ev)));
            p.cleanup = [] { cudaEventDestroy(ev); };
            return p;
          });
    }
    run_case("cudaDeviceSynchronize", m, nullptr, [](cudaStream_t s) {
      fill_on(s, d_b, 1);
      Probe p;
      p.call = rc("cudaDeviceSynchronize", cudaDeviceSynchronize());
      return p;
    });
    // The legacy default stream synchronizes with blocking streams only, so
    // both kinds of capturing stream. d_c is 3 before; 0 after means it ran.
    for (const bool blocking : {false, true}) {
      run_case(
          blocking ? "legacy_stream_memset(capturing stream blocking)"
                   : "legacy_stream_memset(capturing stream non-blocking)",
          m, [] { dev_fill(d_c, kN, 3); },
          [](cudaStream_t s) {
            fill_on(s, d_b, 1);
            Probe p;
            p.call = rc("cudaMemsetAsync(stream 0)", cudaMemsetAsync(d_c, 0, kBytes, 0));
            p.after_end = [] {
              const cudaError_t e = cudaStreamSynchronize(0);
              return fmt("extra: stream0.sync=%s d_c=%s", err(e), dev_val(d_c).c_str());
            };
            return p;
          },
          blocking ? cudaStreamDefault : cudaStreamNonBlocking);
    }
  }
}

// Nodes added by hand into the capturing graph between captured kernels:
// fill 1, memset 2 (hand), +1, *2 (hand), +1: 7 only in that order.
void hand_nodes() {
  run_case(
      "getinfo_update_dependencies", cudaStreamCaptureModeGlobal, [] { dev_fill(d_a, kN, 0); },
      [](cudaStream_t s) {
        Probe p;
        fill_on(s, d_a, 1);
        cudaStreamCaptureStatus st{};
        unsigned long long id = 0;
        cudaGraph_t g = nullptr;
        const cudaGraphNode_t* deps = nullptr;
        const cudaGraphEdgeData* edges = nullptr;
        size_t nd = 0;
        cudaError_t e = cudaStreamGetCaptureInfo(s, &st, &id, &g, &deps, &edges, &nd);
        p.call = rc("GetCaptureInfo", e) + fmt("(id=%llu graph=%s deps=%zu edgeData=%s)", id,
                                               g ? "set" : "null", nd, edges ? "set" : "null");
        std::vector<cudaGraphNode_t> dv(deps, deps + nd);
        cudaMemsetParams mp{};
        mp.dst = d_a;
        mp.value = 2;
        mp.elementSize = 4;
        mp.width = kN;
        mp.height = 1;
        mp.pitch = kBytes;
        cudaGraphNode_t memset_node = nullptr;
        p.call += " " + rc("AddMemsetNode",
                           cudaGraphAddMemsetNode(&memset_node, g, dv.data(), dv.size(), &mp));
        p.call += " " + rc("UpdateCaptureDependencies(Set)",
                           cudaStreamUpdateCaptureDependencies(s, &memset_node, nullptr, 1,
                                                               cudaStreamSetCaptureDependencies));
        add_kernel<<<4, 256, 0, s>>>(d_a, kN, 1);
        e = cudaStreamGetCaptureInfo(s, &st, &id, &g, &deps, &edges, &nd);
        p.call += " " + rc("GetCaptureInfo", e) + fmt("(deps=%zu)", nd);
        dv.assign(deps, deps + nd);
        int* ptr = d_a;
        int n = kN;
        int two = 2;
        void* args[] = {&ptr, &n, &two};
        cudaKernelNodeParams kp{};
        kp.func = reinterpret_cast<void*>(mul_kernel);
        kp.gridDim = dim3(4);
        kp.blockDim = dim3(256);
        kp.kernelParams = args;
        cudaGraphNode_t kernel_node = nullptr;
        p.call += " " + rc("AddKernelNode",
                           cudaGraphAddKernelNode(&kernel_node, g, dv.data(), dv.size(), &kp));
        p.call += " " + rc("UpdateCaptureDependencies(Set)",
                           cudaStreamUpdateCaptureDependencies(s, &kernel_node, nullptr, 1,
                                                               cudaStreamSetCaptureDependencies));
        add_kernel<<<4, 256, 0, s>>>(d_a, kN, 1);
        p.call += " " + rc("kernel", cudaGetLastError());
        p.effect = [] { return dev_val(d_a) + "(7 = right order)"; };
        return p;
      });
}

// One exec launched on two streams back to back, each run spinning 1 ms: do
// the runs overlap? The same kernel launched eagerly on the two streams is
// the control (they can overlap).
void two_streams() {
  current_case = "two_launches_two_streams";
  deadline_case.fetch_add(1);
  unsigned long long* stamps = nullptr;
  int* counter = nullptr;
  cudaMalloc(&stamps, 8 * sizeof(unsigned long long));
  cudaMalloc(&counter, sizeof(int));
  cudaStream_t s1 = nullptr;
  cudaStream_t s2 = nullptr;
  cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking);
  cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking);
  const unsigned long long ns = 1000000;
  auto read = [&](const char* what, cudaError_t e1, cudaError_t e2) {
    unsigned long long h[8] = {};
    cudaMemcpy(h, stamps, sizeof h, cudaMemcpyDeviceToHost);
    const unsigned long long base = h[0] < h[2] ? h[0] : h[2];
    auto us = [&](unsigned long long t) { return (static_cast<double>(t) - base) / 1000.0; };
    const bool overlap = h[2] < h[1] && h[0] < h[3];
    std::printf(
        "case=two_launches_two_streams  %s  launch1=%s launch2=%s  run0=[%.1f,%.1f]us "
        "run1=[%.1f,%.1f]us  overlapped=%s\n",
        what, err(e1), err(e2), us(h[0]), us(h[1]), us(h[2]), us(h[3]), overlap ? "yes" : "no");
  };
  // Eager control.
  cudaMemset(counter, 0, sizeof(int));
  cudaMemset(stamps, 0, 8 * sizeof(unsigned long long));
  spin_kernel<<<1, 1, 0, s1>>>(stamps, counter, ns);
  const cudaError_t c1 = cudaGetLastError();
  spin_kernel<<<1, 1, 0, s2>>>(stamps, counter, ns);
  const cudaError_t c2 = cudaGetLastError();
  cudaStreamSynchronize(s1);
  cudaStreamSynchronize(s2);
  read("eager kernels on s1,s2", c1, c2);
  // One graph exec.
  cudaStreamBeginCapture(s1, cudaStreamCaptureModeGlobal);
  spin_kernel<<<1, 1, 0, s1>>>(stamps, counter, ns);
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(s1, &g);
  cudaGraphExec_t x = nullptr;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
  if (e == cudaSuccess) {
    for (int round = 0; round < 2; ++round) {  // second round: after upload, warm
      cudaMemset(counter, 0, sizeof(int));
      cudaMemset(stamps, 0, 8 * sizeof(unsigned long long));
      const cudaError_t l1 = cudaGraphLaunch(x, s1);
      const cudaError_t l2 = cudaGraphLaunch(x, s2);
      cudaStreamSynchronize(s1);
      cudaStreamSynchronize(s2);
      read(round == 0 ? "one exec on s1 then s2 (first)" : "one exec on s1 then s2 (again)", l1,
           l2);
    }
    cudaGraphExecDestroy(x);
  } else {
    std::printf("case=two_launches_two_streams  capture/instantiate=%s\n", err(e));
  }
  if (g) cudaGraphDestroy(g);
  cudaStreamDestroy(s1);
  cudaStreamDestroy(s2);
  cudaFree(stamps);
  cudaFree(counter);
  std::fflush(stdout);
  health_check("two_launches_two_streams");
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

void timing() {
  current_case = "timing";
  deadline_case.fetch_add(1);
  constexpr int kChain = 64;
  constexpr int kReps = 200;
  using clk = std::chrono::steady_clock;
  auto us = [](clk::time_point a, clk::time_point b) {
    return std::chrono::duration<double, std::micro>(b - a).count();
  };
  int* cnt = nullptr;
  cudaMalloc(&cnt, sizeof(int));
  cudaMemset(cnt, 0, sizeof(int));
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
  for (int i = 0; i < kChain; ++i) inc_kernel<<<1, 1, 0, s>>>(cnt);
  cudaGraph_t g = nullptr;
  cudaError_t e = cudaStreamEndCapture(s, &g);
  cudaGraphExec_t x = nullptr;
  if (e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
  if (e == cudaSuccess) e = cudaGraphUpload(x, s);
  if (e != cudaSuccess) {
    std::printf("case=timing  setup=%s\n", err(e));
    return;
  }
  long long runs = 0;
  for (int i = 0; i < 10; ++i) {  // warm-up
    cudaGraphLaunch(x, s);
    for (int k = 0; k < kChain; ++k) inc_kernel<<<1, 1, 0, s>>>(cnt);
    runs += 2;
  }
  cudaStreamSynchronize(s);
  std::vector<double> g_host, g_e2e, k_host, k_e2e;
  for (int r = 0; r < kReps; ++r) {
    auto t0 = clk::now();
    cudaGraphLaunch(x, s);
    auto t1 = clk::now();
    cudaStreamSynchronize(s);
    auto t2 = clk::now();
    g_host.push_back(us(t0, t1));
    g_e2e.push_back(us(t0, t2));
    t0 = clk::now();
    for (int k = 0; k < kChain; ++k) inc_kernel<<<1, 1, 0, s>>>(cnt);
    t1 = clk::now();
    cudaStreamSynchronize(s);
    t2 = clk::now();
    k_host.push_back(us(t0, t1));
    k_e2e.push_back(us(t0, t2));
    runs += 2;
  }
  // Back to back, one sync at the end: throughput per chain.
  auto t0 = clk::now();
  for (int r = 0; r < kReps; ++r) cudaGraphLaunch(x, s);
  cudaStreamSynchronize(s);
  const double g_pipe = us(t0, clk::now()) / kReps;
  t0 = clk::now();
  for (int r = 0; r < kReps; ++r)
    for (int k = 0; k < kChain; ++k) inc_kernel<<<1, 1, 0, s>>>(cnt);
  cudaStreamSynchronize(s);
  const double k_pipe = us(t0, clk::now()) / kReps;
  runs += 2 * kReps;
  int got = 0;
  cudaMemcpy(&got, cnt, sizeof got, cudaMemcpyDeviceToHost);
  const long long want = runs * kChain;
  std::printf(
      "case=timing  chain=%d kernels, median of %d, us  graph: launch call %.2f, launch+sync "
      "%.2f, back-to-back %.2f per graph  eager: %d launch calls %.2f, +sync %.2f, back-to-back "
      "%.2f per chain  counter=%d (want %lld: %s)  %s\n",
      kChain, kReps, median(g_host), median(g_e2e), g_pipe, kChain, median(k_host), median(k_e2e),
      k_pipe, got, want, got == want ? "ok" : "WRONG", err(cudaGetLastError()));
  std::fflush(stdout);
  cudaGraphExecDestroy(x);
  cudaGraphDestroy(g);
  cudaStreamDestroy(s);
  cudaFree(cnt);
  health_check("timing");
}

// The launch call's host cost of one 64-kernel chain in four shapes of graph,
// the shapes sluice's native graphs can take: the kernels as they were
// captured (flat); flat with an external event record node after them; the
// flat graph as one child graph node of a capture (cudaStreamGetCaptureInfo,
// cudaGraphAddChildGraphNode, cudaStreamUpdateCaptureDependencies); the
// child node with the record node after it.
void launch_shapes() {
  current_case = "launch_shapes";
  deadline_case.fetch_add(1);
  constexpr int kChain = 64;
  constexpr int kReps = 300;
  using clk = std::chrono::steady_clock;
  int* cnt = nullptr;
  cudaMalloc(&cnt, sizeof(int));
  cudaMemset(cnt, 0, sizeof(int));
  cudaStream_t s = nullptr;
  cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cudaEvent_t ev = nullptr;
  cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
  cudaGraph_t flat = nullptr;
  cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
  for (int i = 0; i < kChain; ++i) inc_kernel<<<1, 1, 0, s>>>(cnt);
  cudaError_t e = cudaStreamEndCapture(s, &flat);
  const char* names[4] = {"flat", "flat+record", "child", "child+record"};
  std::string line = "case=launch_shapes  chain=64 kernels, median of 300 launch calls, us:";
  for (int shape = 0; shape < 4 && e == cudaSuccess; ++shape) {
    cudaGraph_t g = nullptr;
    const bool child = shape >= 2, record = shape % 2 == 1;
    e = cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed);
    if (e == cudaSuccess && child) {
      cudaStreamCaptureStatus st{};
      cudaGraph_t into = nullptr;
      const cudaGraphNode_t* deps = nullptr;
      size_t n = 0;
      e = cudaStreamGetCaptureInfo(s, &st, nullptr, &into, &deps, nullptr, &n);
      cudaGraphNode_t node = nullptr;
      if (e == cudaSuccess) e = cudaGraphAddChildGraphNode(&node, into, deps, n, flat);
      if (e == cudaSuccess)
        e = cudaStreamUpdateCaptureDependencies(s, &node, nullptr, 1,
                                                cudaStreamSetCaptureDependencies);
    } else if (e == cudaSuccess) {
      for (int i = 0; i < kChain; ++i) inc_kernel<<<1, 1, 0, s>>>(cnt);
    }
    if (e == cudaSuccess && record) e = cudaEventRecordWithFlags(ev, s, cudaEventRecordExternal);
    const cudaError_t ended = cudaStreamEndCapture(s, &g);
    if (e == cudaSuccess) e = ended;
    cudaGraphExec_t x = nullptr;
    if (e == cudaSuccess) e = cudaGraphInstantiate(&x, g, 0);
    if (e == cudaSuccess) e = cudaGraphUpload(x, s);
    std::vector<double> host;
    for (int r = 0; r < 20 + kReps && e == cudaSuccess; ++r) {
      const auto t0 = clk::now();
      e = cudaGraphLaunch(x, s);
      const auto t1 = clk::now();
      cudaStreamSynchronize(s);
      if (r >= 20) host.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    char part[96];
    std::snprintf(part, sizeof part, "  %s %.3f", names[shape], host.empty() ? -1.0 : median(host));
    line += part;
    if (x != nullptr) cudaGraphExecDestroy(x);
    if (g != nullptr) cudaGraphDestroy(g);
  }
  std::printf("%s  %s\n", line.c_str(), err(e));
  std::fflush(stdout);
  if (flat != nullptr) cudaGraphDestroy(flat);
  cudaEventDestroy(ev);
  cudaStreamDestroy(s);
  cudaFree(cnt);
  health_check("launch_shapes");
}

// Ends the program when one case takes longer than 20 s (a hang).
void watchdog() {
  std::thread([] {
    int seen = -1;
    int ticks = 0;
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const int now = deadline_case.load();
      if (now != seen) {
        seen = now;
        ticks = 0;
      } else if (++ticks > 200) {
        std::printf("HANG: case %s ran past 20 s; stopping\n", current_case.load());
        std::fflush(stdout);
        std::_Exit(3);
      }
    }
  }).detach();
}

}  // namespace

int main() {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  int rt = 0;
  int drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  int count = 0;
  const cudaError_t ce = cudaGetDeviceCount(&count);
  std::printf("sluice-probe-capture: runtime %d, driver %d, built with CUDART_VERSION %d\n", rt,
              drv, CUDART_VERSION);
  if (ce != cudaSuccess || count == 0) {
    std::printf("no device: %s\n", err(ce));
    return 1;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, 0);
  std::printf("device 0: %s (sm_%d%d), device count %d, main tid %ld\n", prop.name, prop.major,
              prop.minor, count, tid());
  cudaSetDevice(0);
  cudaFree(nullptr);  // create the primary context
  cuInit(0);
  watchdog();

  cudaStreamCreateWithFlags(&helper, cudaStreamNonBlocking);
  cudaMalloc(&d_a, kBytes);
  cudaMalloc(&d_b, kBytes);
  cudaMalloc(&d_c, kBytes);
  cudaMalloc(&d3_src, kD * kD * kD * sizeof(int));
  cudaMalloc(&d3_dst, kD * kD * kD * sizeof(int));
  cudaHostAlloc(&pin_src, kBytes, cudaHostAllocMapped | cudaHostAllocPortable);
  cudaHostAlloc(&pin_dst, kBytes, cudaHostAllocMapped | cudaHostAllocPortable);
  cudaHostGetDevicePointer(reinterpret_cast<void**>(&pin_dst_dev), pin_dst, 0);
  cudaHostAlloc(&pin_words, 64, cudaHostAllocMapped | cudaHostAllocPortable);
  cudaHostAlloc(&scratch, 64, cudaHostAllocMapped | cudaHostAllocPortable);
  const CUresult mr = cuMemHostGetDevicePointer(&words_dev, pin_words, 0);
  const cudaError_t setup = cudaDeviceSynchronize();
  std::printf("setup: %s, cuMemHostGetDevicePointer=%s\n", err(setup), cuerr(mr));
  if (setup != cudaSuccess) return 1;
  std::fflush(stdout);

  copies();
  memsets();
  kernels();
  peer();
  event_records();
  outside_waits();
  fork_join();
  memops();
  host_functions();
  allocations();
  illegal_calls();
  hand_nodes();
  two_streams();
  timing();
  launch_shapes();
  std::printf("done\n");
  return 0;
}
