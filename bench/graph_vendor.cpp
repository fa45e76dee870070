// make_vendor_graph (graph_vendor.hpp): CUDA's stream capture of the bench's
// programs with raw CUDA calls; elsewhere none.
#include "graph_vendor.hpp"

#include "graph_kernels.hpp"

#include <sluice/native.hpp>

#include <stdexcept>
#include <vector>

#if defined(SLUICE_BACKEND_CUDA)
#include <cuda_runtime.h>

namespace sluice_bench {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("raw CUDA graph: ") + what + ": " + cudaGetErrorString(e));
}

class cuda_graph final : public vendor_graph {
 public:
  explicit cuda_graph(const vendor_program& p) : origin_(sluice::native_handle(*p.s)) {
    std::vector<cudaStream_t> streams{origin_};
    for (std::size_t k = 0; k + 1 < p.branches && p.diamond; ++k)
      streams.push_back(sluice::native_handle(p.others[k]));
    events_.resize(streams.size());
    for (auto& e : events_) check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "event");
    check(cudaStreamBeginCapture(origin_, cudaStreamCaptureModeThreadLocal), "begin capture");
    if (p.diamond) {
      check(cudaEventRecord(events_[0], origin_), "fork record");
      for (std::size_t k = 1; k < streams.size(); ++k)
        check(cudaStreamWaitEvent(streams[k], events_[0], 0), "fork wait");
    }
    if (p.kernels && tiny_kernels(origin_, p.a, p.b, p.slots, p.slot_bytes) != 0) {
      cudaGraph_t spoiled = nullptr;
      (void)cudaStreamEndCapture(origin_, &spoiled);
      if (spoiled != nullptr) (void)cudaGraphDestroy(spoiled);
      throw std::runtime_error("raw CUDA graph: a tiny kernel's launch failed");
    }
    const std::size_t per_stream = p.slots / streams.size();
    for (std::size_t i = 0; i < p.slots && !p.kernels; ++i) {
      cudaStream_t x = streams[p.diamond ? i / per_stream : 0];
      unsigned char* slot = p.a + i * p.slot_bytes;
      check(cudaMemsetAsync(slot, static_cast<int>(i + 1), p.slot_bytes, x), "fill");
      check(
          cudaMemcpyAsync(p.b + i * p.slot_bytes, slot, p.slot_bytes, cudaMemcpyDeviceToDevice, x),
          "copy");
    }
    for (std::size_t k = 1; k < streams.size(); ++k) {
      check(cudaEventRecord(events_[k], streams[k]), "join record");
      check(cudaStreamWaitEvent(origin_, events_[k], 0), "join wait");
    }
    check(cudaStreamEndCapture(origin_, &graph_), "end capture");
    check(cudaGraphInstantiate(&exec_, graph_, 0), "instantiate");
  }
  ~cuda_graph() override {
    (void)cudaStreamSynchronize(origin_);
    (void)cudaGraphExecDestroy(exec_);
    (void)cudaGraphDestroy(graph_);
    for (auto e : events_) (void)cudaEventDestroy(e);
  }
  void launch() override { check(cudaGraphLaunch(exec_, origin_), "launch"); }

 private:
  cudaStream_t origin_;
  std::vector<cudaEvent_t> events_;
  cudaGraph_t graph_ = nullptr;
  cudaGraphExec_t exec_ = nullptr;
};

}  // namespace

std::unique_ptr<vendor_graph> make_vendor_graph(const vendor_program& p, std::string&) {
  return std::make_unique<cuda_graph>(p);
}

}  // namespace sluice_bench

#else

namespace sluice_bench {

std::unique_ptr<vendor_graph> make_vendor_graph(const vendor_program&, std::string& why) {
#if defined(SLUICE_BACKEND_HIP)
  why = "not measured: the HIP side has no raw vendor graph in this bench";
#else
  why = "not measured: the host backend has no vendor graph";
#endif
  return nullptr;
}

}  // namespace sluice_bench

#endif
