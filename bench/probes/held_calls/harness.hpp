// The harness of sluice-probe-held-calls (probe.cpp): its options, the hold
// (one stream held on a stream memory wait), bounded waits, the worker that
// makes a case's calls under the watchdog that finds where they block, the
// results and their report (report.cpp), and the set-up and clean-up helpers
// the cases share (setup.cpp). Raw CUDA only (no sluice code).
#pragma once

#include "../../raw/cuda.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace held_calls {

using raw::check;
using clock_type = std::chrono::steady_clock;

constexpr auto release_limit = std::chrono::seconds(10);  // a released call returns within this
constexpr int exit_not_returned = 3;
constexpr int exit_not_drained = 4;
constexpr std::size_t mib = std::size_t{1} << 20;

inline std::FILE* csv_file = nullptr;  // --csv, or none

inline double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

//! Says why and ends the process at once (no hang), stdout and the CSV flushed.
[[noreturn]] void give_up(int code, const std::string& why);

struct options {
  int count = 128;
  int block_ms = 500;
  int max_blocks = 8;
  int device = 0;
  std::vector<std::string> cases;  // empty: all
  std::string csv;
};

struct probe_env {
  options opt;
  raw::wait_fn wait = nullptr;
  int devices = 0;
  int create_block = 0;  // stream_create's first block point (1-based); 0: none found
};

// ---------------------------------------------------------------------------
// The harness: the hold, bounded waits, the worker and its watchdog.

//! Runs f on a thread of its own (the probe's device current) and waits for it
//! at most 10 s; one that has not returned by then ends the process (exit 4).
template <class F>
void bounded(const char* what, int device, F&& f) {
  std::mutex m;
  std::condition_variable cv;
  bool done = false;
  std::thread t([&] {
    check(cudaSetDevice(device), "cudaSetDevice");
    f();
    const std::lock_guard<std::mutex> lock(m);
    done = true;
    cv.notify_all();
  });
  std::unique_lock<std::mutex> lock(m);
  if (!cv.wait_for(lock, release_limit, [&] { return done; }))
    give_up(exit_not_drained, std::string(what) + " had not returned 10 s after the release");
  lock.unlock();
  t.join();
}

void drain(int device);

//! One non-blocking stream held on a stream memory wait for a host-mapped
//! 64-bit word (raw::wait_value). release() stores the value waited for;
//! renew() holds the same stream again on a new, greater value. `behind`
//! queues a case's work behind each wait (an event, say).
class hold {
 public:
  explicit hold(const probe_env& env, std::function<void(cudaStream_t)> behind = {})
      : env_(env), behind_(std::move(behind)) {
    check(cudaHostAlloc(&host_, sizeof(std::uint64_t), cudaHostAllocPortable | cudaHostAllocMapped),
          "cudaHostAlloc(word)");
    word_ = new (host_) std::atomic<std::uint64_t>(0);
    check(cudaHostGetDevicePointer(&dev_word_, host_, 0), "cudaHostGetDevicePointer");
    check(cudaStreamCreateWithFlags(&held_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    engage();
  }
  hold(const hold&) = delete;
  hold& operator=(const hold&) = delete;
  ~hold() {
    release();
    drain(env_.opt.device);
    check(cudaStreamDestroy(held_), "cudaStreamDestroy(held)");
    check(cudaFreeHost(host_), "cudaFreeHost(word)");
  }

  void release() {
    if (released_) return;
    word_->store(value_);
    released_at_ = clock_type::now();
    released_ = true;
  }
  void renew() {
    ++value_;
    engage();
  }
  cudaStream_t stream() const { return held_; }
  clock_type::time_point released_at() const { return released_at_; }
  //! Holds after which the held stream was found not held (should be 0).
  int not_in_effect() const { return not_in_effect_; }

 private:
  void engage() {
    raw::wait_value(env_.wait, held_, dev_word_, value_);
    if (behind_) behind_(held_);
    released_ = false;
    if (cudaStreamQuery(held_) != cudaErrorNotReady) ++not_in_effect_;
    (void)cudaGetLastError();
  }

  const probe_env& env_;
  std::function<void(cudaStream_t)> behind_;
  void* host_ = nullptr;
  std::atomic<std::uint64_t>* word_ = nullptr;
  void* dev_word_ = nullptr;
  cudaStream_t held_{};
  std::uint64_t value_ = 1;
  bool released_ = false;
  clock_type::time_point released_at_{};
  int not_in_effect_ = 0;
};

//! The worker's vendor calls: names the one in progress for the watchdog, and
//! counts the failures (a failed call is counted, not fatal).
class vendor {
 public:
  template <class F>
  bool call(const char* name, F&& f) {
    current_.store(name);
    const cudaError_t err = f();
    if (err == cudaSuccess) return true;
    (void)cudaGetLastError();
    if (errors_++ == 0) first_error_ = std::string(name) + ":" + cudaGetErrorName(err);
    return false;
  }
  const char* current() const { return current_.load(); }
  int errors() const { return errors_; }
  const std::string& first_error() const { return first_error_; }

 private:
  std::atomic<const char*> current_{""};
  int errors_ = 0;
  std::string first_error_;
};

struct block_point {
  int call = 0;                          // 1-based
  std::string in;                        // the vendor call in progress
  double blocked_for_ms = 0;             // from the call's start to the release
  double returned_after_release_ms = 0;  // from the release to its return
};

struct phase_result {
  std::string name;     // the case, or case.phase
  std::string calls;    // the vendor calls of one iteration
  std::string skipped;  // not empty: not run, and why
  int count = 0;
  int completed = 0;
  std::vector<block_point> blocks;
  std::vector<double> unblocked_us;
  int errors = 0;
  std::string first_error;
  std::string notes;  // more " key=value" fields
};

inline phase_result skipped(const char* name, std::string why) {
  phase_result r;
  r.name = name;
  r.skipped = std::move(why);
  return r;
}

//! One iteration of a case: the vendor calls made for call number i (0-based).
using iteration_fn = std::function<void(int, vendor&)>;

//! Runs `iteration` n times on a worker thread while the main thread watches:
//! an iteration still running after --block-ms is a block point; the hold is
//! released, the iteration waited for (10 s at most: exit 3), the device
//! drained and the hold renewed, and the worker goes on. Stops after
//! --max-blocks block points, or after the first with stop_at_first_block
//! (then the hold stays released).
phase_result run_calls(hold& h, const probe_env& env, std::string name, std::string calls, int n,
                       const iteration_fn& iteration, bool stop_at_first_block = false);

// ---------------------------------------------------------------------------
// Output.

std::string fmt(const char* f, double x);

//! The block points' values, joined by sep ("none" or "-" when there are none).
template <class F>
std::string joined(const phase_result& r, const char* sep, const char* empty, F&& field) {
  if (r.blocks.empty()) return empty;
  std::string s;
  for (const block_point& b : r.blocks) s += (s.empty() ? "" : sep) + field(b);
  return s;
}

std::string csv_field(const std::string& s);
//! CUDA_DEVICE_MAX_CONNECTIONS as inherited, or "unset".
const char* connections();
//! The phase's line on stdout, and its row in the CSV (--csv).
void report(const phase_result& r);

// ---------------------------------------------------------------------------
// Set-up helpers (before the hold: they exit on failure) and clean-up (after
// the hold is released and the device drained: failures ignored).

//! A fresh primary context on each of `devices` (cudaDeviceReset, then made
//! again), the probe's device current.
void fresh_context(const probe_env& env, std::initializer_list<int> devices);

std::vector<cudaStream_t> make_streams(int n);
std::vector<cudaEvent_t> make_events(int n, unsigned flags);
std::vector<void*> make_device_blocks(int n, std::size_t bytes);

// The clean-ups skip the null entries: those the case destroyed itself.
void destroy(const std::vector<cudaStream_t>& s);
void destroy(const std::vector<cudaEvent_t>& e);
void free_device(const std::vector<void*>& b);
void free_host(const std::vector<void*>& b);

//! An iteration that creates one non-blocking stream and keeps it in `made`.
iteration_fn create_stream_into(std::vector<cudaStream_t>& made);

//! An iteration that destroys streams[i] (and forgets it).
iteration_fn destroy_stream_of(std::vector<cudaStream_t>& streams);

using results = std::vector<phase_result>;

}  // namespace held_calls
