// sluice-probe-held-calls: the set-up helpers (before the hold: they exit on
// failure) and the clean-ups (after the hold is released and the device
// drained: failures ignored) that the cases share (harness.hpp).
#include "harness.hpp"

namespace held_calls {

//! A fresh primary context on each of `devices` (cudaDeviceReset, then made
//! again), the probe's device current.
void fresh_context(const probe_env& env, std::initializer_list<int> devices) {
  for (const int d : devices) {
    check(cudaSetDevice(d), "cudaSetDevice");
    check(cudaDeviceReset(), "cudaDeviceReset");
    check(cudaFree(nullptr), "cudaFree(0)");
  }
  check(cudaSetDevice(env.opt.device), "cudaSetDevice");
}

std::vector<cudaStream_t> make_streams(int n) {
  std::vector<cudaStream_t> s(static_cast<std::size_t>(n));
  for (auto& x : s) check(cudaStreamCreateWithFlags(&x, cudaStreamNonBlocking), "cudaStreamCreate");
  return s;
}

std::vector<cudaEvent_t> make_events(int n, unsigned flags) {
  std::vector<cudaEvent_t> e(static_cast<std::size_t>(n));
  for (auto& x : e) check(cudaEventCreateWithFlags(&x, flags), "cudaEventCreateWithFlags");
  return e;
}

std::vector<void*> make_device_blocks(int n, std::size_t bytes) {
  std::vector<void*> b(static_cast<std::size_t>(n));
  for (auto& x : b) check(cudaMalloc(&x, bytes), "cudaMalloc");
  return b;
}

// The clean-ups skip the null entries: those the case destroyed itself.
void destroy(const std::vector<cudaStream_t>& s) {
  for (cudaStream_t x : s)
    if (x != nullptr) (void)cudaStreamDestroy(x);
}
void destroy(const std::vector<cudaEvent_t>& e) {
  for (cudaEvent_t x : e)
    if (x != nullptr) (void)cudaEventDestroy(x);
}
void free_device(const std::vector<void*>& b) {
  for (void* x : b)
    if (x != nullptr) (void)cudaFree(x);
}
void free_host(const std::vector<void*>& b) {
  for (void* x : b)
    if (x != nullptr) (void)cudaFreeHost(x);
}

//! An iteration that creates one non-blocking stream and keeps it in `made`.
iteration_fn create_stream_into(std::vector<cudaStream_t>& made) {
  return [&made](int, vendor& v) {
    cudaStream_t s{};
    if (v.call("cudaStreamCreateWithFlags",
               [&] { return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking); }))
      made.push_back(s);
  };
}

//! An iteration that destroys streams[i] (and forgets it).
iteration_fn destroy_stream_of(std::vector<cudaStream_t>& streams) {
  return [&streams](int i, vendor& v) {
    if (v.call("cudaStreamDestroy", [&] { return cudaStreamDestroy(streams[i]); }))
      streams[i] = nullptr;
  };
}

}  // namespace held_calls
