// CUPTI as the activity tracer's source (activity_tracer.hpp), sluice::cuda
// only (backends/cuda_hip/CMakeLists.txt builds this file into it when the
// toolkit has cupti.h). libcupti is loaded at run time (cupti_library.hpp;
// SLUICE_CUPTI_LIBRARY=<path> names another, and then no loaded driver is
// required): a machine without it traces with timing events, as does one
// where CUPTI is already in use by another tool (Nsight Systems, a profiler:
// cuptiSubscribe says so).
#include "settings.hpp"
#include "trace/activity_tracer.hpp"
#include "trace/cupti_buffers.hpp"
#include "trace/cupti_library.hpp"

#include <cupti.h>

#include <cstdio>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace sluice::detail {

namespace {

constexpr CUpti_ExternalCorrelationKind sluice_kind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;

// How an activity is tied to the sluice operation that enqueued it. By
// default (SLUICE_CUPTI_CORRELATION=callbacks) CUPTI calls sluice back at the
// entry of each runtime call that enqueues device work (the list below:
// cuda_api.hpp's calls, sm_copy.cu's launches, the kernels of
// sluice::kokkos), and the callback notes that call's correlation id against
// the operation the calling thread is enqueuing (push/pop set it, a
// thread-local: no CUPTI call); every other runtime call (event records,
// waits, queries) costs CUPTI nothing. SLUICE_CUPTI_CORRELATION=external:
// CUPTI's external correlation ids instead, which need the API record of every
// runtime call (CUPTI_ACTIVITY_KIND_RUNTIME): on 2x H200, API records of the
// enqueuing calls only (cuptiActivityEnableRuntimeApi) gave no
// external-correlation record at all, and with every call's record an event
// record cost 2.4x untraced against 1.6x without (bench/trace_cost;
// docs/results/runs/2026-11-27-cupti-trace-source.md).
constexpr CUpti_CallbackId enqueue_calls[] = {
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeerAsync_v4000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v12080,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyBatchAsync_ptsz_v13000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060,
    CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000,
    CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000,
};

//! The operation the calling thread is enqueuing (callbacks mode): its id,
//! and the one it interrupted (push/pop nest).
thread_local std::uint64_t current_op = 0;
thread_local std::vector<std::uint64_t> outer_ops;

class cupti_source final : public activity_source {
 public:
  bool load(std::string* why) { return load_cupti(t_, why); }

  bool start(std::string* why) override {
    // A second subscriber is refused: another tool holds CUPTI.
    CUptiResult r = t_.subscribe(&subscriber_, &api_callback, this);
    if (r != CUPTI_SUCCESS) {
      *why = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                 ? "CUPTI is already in use by another tool (cuptiSubscribe: " + text(r) + ")"
                 : "cuptiSubscribe: " + text(r);
      return false;
    }
    if (!registered_) {
      r = t_.register_callbacks(&buffer_requested, &buffer_completed);
      if (r != CUPTI_SUCCESS) {
        *why = "cuptiActivityRegisterCallbacks: " + text(r);
        t_.unsubscribe(subscriber_);
        return false;
      }
      registered_ = true;
    }
    {
      std::lock_guard<std::mutex> lock(m_);
      batch_ = activity_batch{};
    }
    enabled_.clear();
    callbacks_.clear();
    cupti_buffers().prepare(settings::cupti_buffers(2));
    const settings::cupti_correlation_choice mode = settings::cupti_correlation();
    external_ =
        mode == settings::cupti_correlation_choice::external || t_.enable_callback == nullptr;
    // A diagnosis, not a trace source: the activity kinds alone, with no
    // correlation (no callback, no API record), so that a bench can tell
    // CUPTI's cost for the activities from the cost of tying them to
    // sluice's operations. No sluice operation gets device times this way.
    uncorrelated_ = !external_ && mode == settings::cupti_correlation_choice::none;
    std::vector<CUpti_ActivityKind> kinds = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET};
    // An external-correlation record names the correlation id of a runtime
    // or driver API record (CUpti_ActivityExternalCorrelation): with no API
    // kind enabled, CUPTI ties no activity to a sluice operation. The API
    // records are dropped in add().
    if (external_) {
      kinds.push_back(CUPTI_ACTIVITY_KIND_RUNTIME);
      kinds.push_back(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    }
    for (const CUpti_ActivityKind k : kinds) {
      r = t_.enable(k);
      if (r != CUPTI_SUCCESS) {
        *why = "cuptiActivityEnable(" + std::to_string(static_cast<int>(k)) + "): " + text(r);
        stop_recording();
        return false;
      }
      enabled_.push_back(k);
    }
    if (!external_ && !uncorrelated_) {
      for (const CUpti_CallbackId c : enqueue_calls) {
        r = t_.enable_callback(1, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, c);
        if (r == CUPTI_SUCCESS) callbacks_.push_back(c);
      }
      if (callbacks_.empty()) {
        *why = "cuptiEnableCallback: " + text(r);
        stop_recording();
        return false;
      }
    }
    return true;
  }

  void push(std::uint64_t external) noexcept override {
    if (external_) {
      t_.push(sluice_kind, external);
      return;
    }
    if (current_op != 0) {
      try {
        outer_ops.push_back(current_op);
      } catch (...) {  // out of memory: the outer operation's later calls go untied
      }
    }
    current_op = external;
  }
  void pop() noexcept override {
    if (external_) {
      std::uint64_t last = 0;
      t_.pop(sluice_kind, &last);
      return;
    }
    current_op = 0;
    if (!outer_ops.empty()) {
      current_op = outer_ops.back();
      outer_ops.pop_back();
    }
  }
  bool stream_id(void* native, std::uint32_t* id) noexcept override {
    return t_.stream_id(nullptr, static_cast<CUstream>(native), 0, id) == CUPTI_SUCCESS;
  }
  void ignore_stream(void* native) noexcept override {
    std::uint32_t id = 0;
    if (t_.stream_id(nullptr, static_cast<CUstream>(native), 0, &id) != CUPTI_SUCCESS) return;
    try {
      std::lock_guard<std::mutex> lock(m_);
      ignored_.insert(id);
    } catch (...) {  // out of memory: its activities count as off sluice's streams
    }
  }
  std::uint64_t timestamp() noexcept override {
    std::uint64_t t = 0;
    t_.timestamp(&t);
    return t;
  }

  void stop(activity_batch* out) override {
    // Forced: buffers with records not complete come back too (those are
    // skipped: trace_end waits for nothing).
    t_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    stop_recording();
    t_.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock(m_);
    *out = std::move(batch_);
    batch_ = activity_batch{};
    out->settings = std::string("\"cupti_correlation\": \"") +
                    (external_       ? "external ids (every runtime call's API record)"
                     : uncorrelated_ ? "none (diagnosis: activities only, no sluice "
                                       "operation tied to them)"
                                     : "callbacks at the calls that enqueue device work") +
                    "\", \"cupti_buffers_allocated_in_trace\": " +
                    std::to_string(cupti_buffers().take_asked_beyond());
  }

  static cupti_source* the;

 private:
  std::string text(CUptiResult r) const {
    const char* s = nullptr;
    if (t_.result_string != nullptr) t_.result_string(r, &s);
    return (s != nullptr ? std::string(s) : std::string("CUPTI error")) + " (" +
           std::to_string(static_cast<int>(r)) + ")";
  }

  //! At the entry of an enqueuing runtime call (callbacks mode), on the
  //! calling thread: the call's correlation id belongs to the operation
  //! that thread is enqueuing, if any (a user's own call: none).
  static void CUPTIAPI api_callback(void* self, CUpti_CallbackDomain domain, CUpti_CallbackId,
                                    const void* data) {
    if (domain != CUPTI_CB_DOMAIN_RUNTIME_API || current_op == 0 || data == nullptr) return;
    const auto* d = static_cast<const CUpti_CallbackData*>(data);
    if (d->callbackSite != CUPTI_API_ENTER) return;
    auto* me = static_cast<cupti_source*>(self);
    try {
      std::lock_guard<std::mutex> lock(me->m_);
      me->batch_.correlations.emplace_back(d->correlationId, current_op);
    } catch (...) {  // out of memory: the operation is left out (and counted)
    }
  }

  //! Disables what start() enabled and unsubscribes.
  void stop_recording() {
    for (const auto e : enabled_) t_.disable(e);
    enabled_.clear();
    for (const CUpti_CallbackId c : callbacks_)
      t_.enable_callback(0, subscriber_, CUPTI_CB_DOMAIN_RUNTIME_API, c);
    callbacks_.clear();
    t_.unsubscribe(subscriber_);
  }

  static void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = cupti_buffers().get();
    *size = *buffer != nullptr ? cupti_buffer_bytes : 0;
    *max_records = 0;  // as many as fit
  }

  static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer,
                                        size_t /*size*/, size_t valid) {
    if (the != nullptr) the->take(ctx, stream, buffer, valid);
    cupti_buffers().put(buffer);
  }

  //! On CUPTI's thread (or the flushing one): the buffer's records, copied.
  void take(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t valid) noexcept {
    try {
      std::lock_guard<std::mutex> lock(m_);
      CUpti_Activity* rec = nullptr;
      while (t_.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) add(rec);
      size_t dropped = 0;
      if (t_.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS) batch_.dropped += dropped;
    } catch (...) {
      std::fprintf(stderr, "sluice: trace: out of memory while reading CUPTI's records\n");
    }
  }

  //! What every device activity record has: its correlation, stream and times.
  template <class Record>
  static void common(activity_record& a, const CUpti_Activity* rec, activity_record::type what) {
    const auto* r = reinterpret_cast<const Record*>(rec);
    a.what = what;
    a.correlation = r->correlationId;
    a.stream = r->streamId;
    a.start = r->start;
    a.end = r->end;
  }

  void add(const CUpti_Activity* rec) {
    activity_record a;
    switch (rec->kind) {
      case CUPTI_ACTIVITY_KIND_KERNEL:
      case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
        common<CUpti_ActivityKernel10>(a, rec, activity_record::type::kernel);
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        // sluice's host-function gate kernel (host_gate.cu) is the host_func
        // operation's device side, not a kernel of the user's: its span is the
        // host function's (kept, each gate shows as one more operation on the
        // stream's track: 2x H200, docs/results/runs/2026-11-27-gate-kernel.md).
        if (k->name != nullptr && std::strstr(k->name, "sluice_host_gate") != nullptr) return;
        if (k->name != nullptr) a.name = k->name;
        break;
      }
      case CUPTI_ACTIVITY_KIND_MEMCPY:
        common<CUpti_ActivityMemcpy6>(a, rec, activity_record::type::copy);
        a.bytes = reinterpret_cast<const CUpti_ActivityMemcpy6*>(rec)->bytes;
        break;
      case CUPTI_ACTIVITY_KIND_MEMCPY2:
        common<CUpti_ActivityMemcpyPtoP4>(a, rec, activity_record::type::copy);
        a.bytes = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(rec)->bytes;
        break;
      case CUPTI_ACTIVITY_KIND_MEMSET:
        common<CUpti_ActivityMemset4>(a, rec, activity_record::type::fill);
        a.bytes = reinterpret_cast<const CUpti_ActivityMemset4*>(rec)->bytes;
        break;
      case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
        const auto* x = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
        if (x->externalKind == sluice_kind)
          batch_.correlations.emplace_back(x->correlationId, x->externalId);
        return;
      }
      default: return;
    }
    if (ignored_.count(a.stream) != 0) return;
    batch_.activities.push_back(std::move(a));
  }

  cupti_table t_;
  CUpti_SubscriberHandle subscriber_{};
  bool registered_ = false;
  std::vector<CUpti_ActivityKind> enabled_;
  std::vector<CUpti_CallbackId> callbacks_;  // enabled (callbacks mode)
  bool external_ = false;                    // SLUICE_CUPTI_CORRELATION=external
  bool uncorrelated_ = false;                // SLUICE_CUPTI_CORRELATION=none (a diagnosis)
  std::mutex m_;                             // batch_, ignored_
  activity_batch batch_;
  std::set<std::uint32_t> ignored_;  // stream ids (ignore_stream)
};

cupti_source* cupti_source::the = nullptr;

}  // namespace

activity_source* vendor_activity_source(std::string* why) {
  // Loaded once per process; a failed load is not tried again.
  static std::string load_error;
  static cupti_source* source = [] {
    auto* s = new cupti_source();  // never destroyed: CUPTI may call back at exit
    if (!s->load(&load_error)) {
      delete s;
      return static_cast<cupti_source*>(nullptr);
    }
    cupti_source::the = s;
    return s;
  }();
  if (source == nullptr) *why = load_error;
  return source;
}

}  // namespace sluice::detail
