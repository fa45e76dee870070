// The simulated runtime's CUPTI (sim_cupti.hpp): the activity API calls
// sluice's CUPTI source makes (backends/cuda_hip/trace/cupti_source.cpp), over
// the model's work. Records are CUPTI's own structs, handed over in buffers the
// client supplies, read back with cuptiActivityGetNextRecord. Not NVIDIA's code:
// a model of the documented behaviour.
//
// SLUICE_SIM_CUPTI_BUSY=1: cuptiSubscribe answers
// CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED (another tool holds CUPTI).
// SLUICE_SIM_CUPTI_DROP=N: the first N device activities of each recording
// (of at least SLUICE_SIM_CUPTI_DROP_MIN_BYTES bytes, default 0: sluice's own
// warm-up activities in trace_begin are smaller) are dropped and counted
// (cuptiActivityGetNumDroppedRecords).
// External-correlation records only while CUPTI_ACTIVITY_KIND_RUNTIME is
// enabled (every runtime call's API record): 2x H200 gave none with the API
// records of chosen calls only (cuptiActivityEnableRuntimeApi;
// docs/results/runs/2026-11-27-cupti-trace-source.md).
// cuptiEnableCallback (runtime domain): the subscriber's callback at the entry
// and exit of each enabled call, with its correlation id, on the calling thread.
#include "sim_cupti.hpp"

#include <cupti.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace {

static_assert(sim_cupti::cbid::memcpy_async == CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020);
static_assert(sim_cupti::cbid::memset_async == CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020);
static_assert(sim_cupti::cbid::event_record == CUPTI_RUNTIME_TRACE_CBID_cudaEventRecord_v3020);
static_assert(sim_cupti::cbid::stream_wait_event ==
              CUPTI_RUNTIME_TRACE_CBID_cudaStreamWaitEvent_v3020);
static_assert(sim_cupti::cbid::memcpy_peer_async ==
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000);
static_assert(sim_cupti::cbid::launch_kernel == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
static_assert(sim_cupti::cbid::launch_host_func ==
              CUPTI_RUNTIME_TRACE_CBID_cudaLaunchHostFunc_v10000);
static_assert(sim_cupti::cbid::memcpy_batch_async ==
              CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000);

struct state {
  std::mutex m;
  bool subscribed = false;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  std::set<int> enabled;
  CUpti_CallbackFunc callback = nullptr;  // cuptiSubscribe's
  void* userdata = nullptr;
  std::set<int> callbacks;                          // runtime calls with the callback enabled
  std::vector<std::vector<unsigned char>> records;  // not yet handed over
  std::uint64_t dropped = 0;
  std::uint64_t to_drop = 0;
  std::uint64_t drop_min_bytes = 0;
  std::atomic<bool> recording{false};
  std::atomic<std::uint32_t> next_correlation{1};
  std::set<std::string> names;  // kernel names stay valid (CUPTI's do)
};
state& st() {
  static auto* s = new state;
  return *s;
}

thread_local std::vector<std::uint64_t> external_stack[CUPTI_EXTERNAL_CORRELATION_KIND_SIZE];

template <class R>
void keep_locked(const R& r) {
  std::vector<unsigned char> bytes(sizeof(R));
  std::memcpy(bytes.data(), &r, sizeof(R));
  st().records.push_back(std::move(bytes));
}

std::size_t size_of(CUpti_ActivityKind k) {
  switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
    case CUPTI_ACTIVITY_KIND_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMCPY2: return sizeof(CUpti_ActivityMemcpyPtoP4);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: return sizeof(CUpti_ActivityAPI);
    default: return 0;
  }
}

std::size_t padded(std::size_t n) { return (n + 7) / 8 * 8; }

}  // namespace

namespace sim_cupti {

std::uint64_t now() noexcept {
  // CUPTI's timestamps are on the realtime clock here (cuptiGetTimestamp on a
  // Linux host: ns since the epoch), not sluice's steady clock.
  return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::system_clock::now().time_since_epoch())
                                        .count());
}

std::uint32_t api_call(int cbid) noexcept {
  auto& s = st();
  if (!s.recording.load()) return 0;
  const std::uint32_t c = s.next_correlation.fetch_add(1);
  CUpti_CallbackFunc callback = nullptr;
  void* userdata = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.m);
    if (s.callbacks.count(cbid) != 0) {
      callback = s.callback;
      userdata = s.userdata;
    }
  }
  if (callback != nullptr) {  // outside the lock, as CUPTI calls it: on the calling thread
    CUpti_CallbackData d{};
    d.correlationId = c;
    d.functionName = "a simulated runtime call";
    d.callbackSite = CUPTI_API_ENTER;
    callback(userdata, CUPTI_CB_DOMAIN_RUNTIME_API, static_cast<CUpti_CallbackId>(cbid), &d);
    d.callbackSite = CUPTI_API_EXIT;
    callback(userdata, CUPTI_CB_DOMAIN_RUNTIME_API, static_cast<CUpti_CallbackId>(cbid), &d);
  }
  std::lock_guard<std::mutex> lock(s.m);
  if (s.enabled.count(CUPTI_ACTIVITY_KIND_RUNTIME) == 0)
    return c;  // no API record, no external one
  if (s.enabled.count(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) != 0)
    for (int k = 0; k < CUPTI_EXTERNAL_CORRELATION_KIND_SIZE; ++k)
      if (!external_stack[k].empty()) {
        CUpti_ActivityExternalCorrelation x{};
        x.kind = CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION;
        x.externalKind = static_cast<CUpti_ExternalCorrelationKind>(k);
        x.externalId = external_stack[k].back();
        x.correlationId = c;
        keep_locked(x);
      }
  CUpti_ActivityAPI a{};
  a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
  a.cbid = static_cast<CUpti_CallbackId>(cbid);
  a.start = a.end = now();
  a.correlationId = c;
  keep_locked(a);
  return c;
}

void ran(activity what, std::uint32_t correlation, std::uint32_t stream, int device,
         std::uint64_t start, std::uint64_t end, std::uint64_t bytes, const char* name) noexcept {
  auto& s = st();
  if (!s.recording.load() || correlation == 0) return;
  std::lock_guard<std::mutex> lock(s.m);
  const auto on = [&](CUpti_ActivityKind k) { return s.enabled.count(k) != 0; };
  const bool wanted = what == activity::kernel      ? on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                      : what == activity::copy      ? on(CUPTI_ACTIVITY_KIND_MEMCPY)
                      : what == activity::copy_peer ? on(CUPTI_ACTIVITY_KIND_MEMCPY2)
                                                    : on(CUPTI_ACTIVITY_KIND_MEMSET);
  if (!wanted) return;
  if (s.to_drop > 0 && bytes >= s.drop_min_bytes) {
    --s.to_drop;
    ++s.dropped;
    return;
  }
  const auto dev = static_cast<std::uint32_t>(device);
  // What every device activity record has; the caller adds the rest.
  const auto record = [&](auto r, CUpti_ActivityKind kind) {
    r.kind = kind;
    r.start = start;
    r.end = end;
    r.deviceId = dev;
    r.streamId = stream;
    r.correlationId = correlation;
    return r;
  };
  switch (what) {
    case activity::kernel: {
      auto k = record(CUpti_ActivityKernel10{}, CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
      k.name = s.names.insert(name != nullptr ? name : "").first->c_str();
      keep_locked(k);
      break;
    }
    case activity::copy: {
      auto c = record(CUpti_ActivityMemcpy6{}, CUPTI_ACTIVITY_KIND_MEMCPY);
      c.bytes = bytes;
      keep_locked(c);
      break;
    }
    case activity::copy_peer: {
      auto c = record(CUpti_ActivityMemcpyPtoP4{}, CUPTI_ACTIVITY_KIND_MEMCPY2);
      c.bytes = bytes;
      keep_locked(c);
      break;
    }
    case activity::fill: {
      auto f = record(CUpti_ActivityMemset4{}, CUPTI_ACTIVITY_KIND_MEMSET);
      f.bytes = bytes;
      keep_locked(f);
      break;
    }
  }
}

}  // namespace sim_cupti

extern "C" {

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle* sub, CUpti_CallbackFunc callback,
                           void* userdata) {
  const char* busy = std::getenv("SLUICE_SIM_CUPTI_BUSY");
  if (busy != nullptr && std::strcmp(busy, "1") == 0)
    return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  std::lock_guard<std::mutex> lock(st().m);
  if (st().subscribed) return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
  st().subscribed = true;
  st().callback = callback;
  st().userdata = userdata;
  *sub = reinterpret_cast<CUpti_SubscriberHandle>(&st());
  return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle) {
  std::lock_guard<std::mutex> lock(st().m);
  st().subscribed = false;
  st().callback = nullptr;
  st().callbacks.clear();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc request,
                                           CUpti_BuffersCallbackCompleteFunc complete) {
  if (request == nullptr || complete == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  std::lock_guard<std::mutex> lock(st().m);
  st().request = request;
  st().complete = complete;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnable(CUpti_ActivityKind k) {
  auto& s = st();
  if (size_of(k) == 0) return CUPTI_ERROR_NOT_COMPATIBLE;  // not modelled
  std::lock_guard<std::mutex> lock(s.m);
  if (s.request == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
  if (s.enabled.empty()) {
    const char* drop = std::getenv("SLUICE_SIM_CUPTI_DROP");
    s.to_drop = drop != nullptr ? std::strtoull(drop, nullptr, 10) : 0;
    const char* min = std::getenv("SLUICE_SIM_CUPTI_DROP_MIN_BYTES");
    s.drop_min_bytes = min != nullptr ? std::strtoull(min, nullptr, 10) : 0;
  }
  s.enabled.insert(k);
  s.recording.store(true);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityDisable(CUpti_ActivityKind k) {
  auto& s = st();
  std::lock_guard<std::mutex> lock(s.m);
  s.enabled.erase(k);
  if (s.enabled.empty()) s.recording.store(false);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle sub,
                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  auto& s = st();
  std::lock_guard<std::mutex> lock(s.m);
  if (!s.subscribed || sub != reinterpret_cast<CUpti_SubscriberHandle>(&s))
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API) return CUPTI_ERROR_NOT_SUPPORTED;  // not modelled
  if (enable != 0)
    s.callbacks.insert(static_cast<int>(cbid));
  else
    s.callbacks.erase(static_cast<int>(cbid));
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t) {
  auto& s = st();
  std::vector<std::vector<unsigned char>> records;
  CUpti_BuffersCallbackRequestFunc request = nullptr;
  CUpti_BuffersCallbackCompleteFunc complete = nullptr;
  {
    std::lock_guard<std::mutex> lock(s.m);
    records.swap(s.records);
    request = s.request;
    complete = s.complete;
  }
  if (request == nullptr) return CUPTI_ERROR_INVALID_OPERATION;
  std::size_t i = 0;
  while (i < records.size()) {
    uint8_t* buffer = nullptr;
    size_t size = 0, max_records = 0;
    request(&buffer, &size, &max_records);
    if (buffer == nullptr) return CUPTI_ERROR_UNKNOWN;
    size_t used = 0;
    while (i < records.size() && used + padded(records[i].size()) <= size) {
      std::memcpy(buffer + used, records[i].data(), records[i].size());
      used += padded(records[i].size());
      ++i;
    }
    complete(nullptr, 0, buffer, size, used);
  }
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t* buffer, size_t valid, CUpti_Activity** record) {
  std::size_t at = 0;
  if (*record != nullptr) {
    const auto* r = reinterpret_cast<uint8_t*>(*record);
    at = static_cast<std::size_t>(r - buffer) + padded(size_of((*record)->kind));
  }
  if (at >= valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = reinterpret_cast<CUpti_Activity*>(buffer + at);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext, uint32_t, size_t* dropped) {
  std::lock_guard<std::mutex> lock(st().m);
  *dropped = st().dropped;
  st().dropped = 0;
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                   uint64_t id) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
      kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  external_stack[kind].push_back(id);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind,
                                                  uint64_t* last) {
  if (kind <= CUPTI_EXTERNAL_CORRELATION_KIND_INVALID ||
      kind >= CUPTI_EXTERNAL_CORRELATION_KIND_SIZE)
    return CUPTI_ERROR_INVALID_PARAMETER;
  if (external_stack[kind].empty()) return CUPTI_ERROR_QUEUE_EMPTY;
  if (last != nullptr) *last = external_stack[kind].back();
  external_stack[kind].pop_back();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetStreamIdEx(CUcontext, CUstream stream, uint8_t, uint32_t* id) {
  if (stream == nullptr || id == nullptr) return CUPTI_ERROR_INVALID_PARAMETER;
  *id = sim_stream_id(stream);
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetTimestamp(uint64_t* t) {
  *t = sim_cupti::now();
  return CUPTI_SUCCESS;
}

CUptiResult cuptiGetResultString(CUptiResult r, const char** text) {
  switch (r) {
    case CUPTI_SUCCESS: *text = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      *text = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
      break;
    default: *text = "CUPTI error of the simulated runtime"; break;
  }
  return CUPTI_SUCCESS;
}

}  // extern "C"
