// sluice-probe-held-calls: raw CUDA only (no sluice code). Which CUDA runtime
// calls block while one stream is held, and past which count.
//
// Found on 2x H200 (driver 580.159.04, CUDA 13.0): with one stream held on a
// stream memory wait (cuStreamWaitValue64 on a host-mapped word, the way a
// sluice gate holds one: raw::wait_value), about the 34th
// cudaStreamCreateWithFlags blocked until the hold was released. This probe
// catalogues the call families sluice makes.
//
// Each case runs in a fresh context (cudaDeviceReset first). It makes what it
// needs before the hold, holds a non-blocking stream, and a worker thread then
// runs the case's calls --count times, timing each. The main thread is a
// watchdog: a call that has not returned within --block-ms is a block point.
// The watchdog then releases the hold, waits (at most 10 s) for the call to
// return, waits for the device to drain, holds the same stream again on a new
// value and lets the worker go on, so that later block points are found too.
// A case stops after --max-blocks block points (a call that blocks every time
// would otherwise take count x block-ms).
//
// One line per case (per phase, for the cases of several phases), key=value:
//   case=stream_create calls=cudaStreamCreateWithFlags(NonBlocking) count=128 completed=128
//   blocked_at=34,68 blocked_in=cudaStreamCreateWithFlags,cudaStreamCreateWithFlags
//   blocked_for_ms=501.0,500.9 returned_after_release_ms=0.21,0.19 max_unblocked_us=48.2
//   median_unblocked_us=5.9 errors=0 result=BLOCKS
// (on one line). blocked_at: the 1-based calls that blocked ("none"); blocked_in:
// the vendor call each was in; blocked_for_ms: from its start to the release;
// returned_after_release_ms: from the release to its return; *_unblocked_us:
// the calls that did not block; errors: failed calls, with the first one named;
// result: BLOCKS or "never blocked" (last, so that the rest of the line is the
// value). A case that cannot run here prints `case=NAME skipped: WHY`.
// --csv=FILE writes the same rows (lists separated by ';').
//
// Exit status: 0 when every case ran, whatever they found; 2 on a usage error
// or a failed set-up call; 3 when a call had not returned 10 s after the
// release; 4 when the device had not drained 10 s after a release.
//
//   sluice-probe-held-calls [--count=N] [--block-ms=M] [--max-blocks=B]
//                           [--cases=a,b,c] [--device=D] [--csv=FILE]
//
// CUDA_DEVICE_MAX_CONNECTIONS is used as inherited (sluice sets 32 where it is
// unset; this probe sets nothing): run it both ways.
#include "../../raw/cuda.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <mutex>
#include <new>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

using raw::check;
using clock_type = std::chrono::steady_clock;

constexpr auto release_limit = std::chrono::seconds(10);  // a released call returns within this
constexpr int exit_not_returned = 3;
constexpr int exit_not_drained = 4;
constexpr std::size_t mib = std::size_t{1} << 20;

std::FILE* csv_file = nullptr;  // --csv, or none

double ms_between(clock_type::time_point a, clock_type::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

//! Says why and ends the process at once (no hang), stdout and the CSV flushed.
[[noreturn]] void give_up(int code, const std::string& why) {
  std::printf("%s\n", why.c_str());
  std::fflush(stdout);
  if (csv_file != nullptr) std::fflush(csv_file);
  _exit(code);
}

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

void drain(int device) {
  bounded("cudaDeviceSynchronize", device,
          [] { check(cudaDeviceSynchronize(), "cudaDeviceSynchronize"); });
}

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

phase_result skipped(const char* name, std::string why) {
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
                       const iteration_fn& iteration, bool stop_at_first_block = false) {
  phase_result r;
  r.name = std::move(name);
  r.calls = std::move(calls);
  r.count = n;
  vendor v;
  std::mutex m;
  std::condition_variable cv;
  int in_call = -1;  // the iteration running, -1 between iterations
  int done = 0;      // iterations that returned
  bool pause = false, stop = false, finished = false;
  clock_type::time_point started{};
  std::vector<double> took_us(static_cast<std::size_t>(n), 0.0);
  std::vector<clock_type::time_point> ended(static_cast<std::size_t>(n));

  std::thread worker([&] {
    for (int i = 0; i < n; ++i) {
      {
        const std::lock_guard<std::mutex> lock(m);
        if (stop) break;
        in_call = i;
        started = clock_type::now();
      }
      // The thread's first CUDA call is watched too (counted in call #1): it
      // could wait for a lock that a blocked call of another thread holds.
      if (i == 0) v.call("cudaSetDevice", [&] { return cudaSetDevice(env.opt.device); });
      iteration(i, v);
      const auto t = clock_type::now();
      std::unique_lock<std::mutex> lock(m);
      ended[i] = t;
      took_us[i] = ms_between(started, t) * 1000;
      in_call = -1;
      done = i + 1;
      cv.notify_all();
      cv.wait(lock, [&] { return !pause; });  // while the watchdog renews the hold
    }
    const std::lock_guard<std::mutex> lock(m);
    finished = true;
    cv.notify_all();
  });

  const auto limit = std::chrono::milliseconds(env.opt.block_ms);
  std::vector<bool> blocked(static_cast<std::size_t>(n), false);
  std::unique_lock<std::mutex> lock(m);
  while (!finished) {
    if (in_call < 0 || pause || clock_type::now() - started < limit) {
      cv.wait_for(lock, std::chrono::milliseconds(1));
      continue;
    }
    const int k = in_call;  // has run past --block-ms: a block point
    const auto call_started = started;
    const std::string in = v.current();
    pause = true;
    lock.unlock();
    h.release();
    const auto released = h.released_at();
    lock.lock();
    if (!cv.wait_until(lock, released + release_limit, [&] { return done > k; }))
      give_up(exit_not_returned, "case=" + r.name + " call #" + std::to_string(k + 1) + " (" + in +
                                     ") had not returned 10 s after the release: giving up");
    blocked[k] = true;
    r.blocks.push_back(
        {k + 1, in, ms_between(call_started, released), ms_between(released, ended[k])});
    if (stop_at_first_block || static_cast<int>(r.blocks.size()) >= env.opt.max_blocks) {
      stop = true;
      if (k + 1 < n) r.notes += " stopped_after_blocks=" + std::to_string(r.blocks.size());
    } else {
      lock.unlock();
      drain(env.opt.device);
      h.renew();
      lock.lock();
    }
    pause = false;
    cv.notify_all();
  }
  lock.unlock();
  worker.join();

  r.completed = done;
  for (int i = 0; i < done; ++i)
    if (!blocked[i]) r.unblocked_us.push_back(took_us[i]);
  r.errors = v.errors();
  r.first_error = v.first_error();
  if (h.not_in_effect() > 0) r.notes += " hold_not_in_effect=" + std::to_string(h.not_in_effect());
  return r;
}

// ---------------------------------------------------------------------------
// Output.

std::string fmt(const char* f, double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, x);
  return buf;
}

//! The block points' values, joined by sep ("none" or "-" when there are none).
template <class F>
std::string joined(const phase_result& r, const char* sep, const char* empty, F&& field) {
  if (r.blocks.empty()) return empty;
  std::string s;
  for (const block_point& b : r.blocks) s += (s.empty() ? "" : sep) + field(b);
  return s;
}

std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (const char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

const char* connections() {
  const char* c = std::getenv("CUDA_DEVICE_MAX_CONNECTIONS");
  return c != nullptr ? c : "unset";
}

void report(const phase_result& r) {
  if (!r.skipped.empty()) {
    std::printf("case=%s skipped: %s\n", r.name.c_str(), r.skipped.c_str());
    if (csv_file != nullptr)
      std::fprintf(csv_file, "%s,%s,,,,,,,,,,,,,%s\n", csv_field(connections()).c_str(),
                   csv_field(r.name).c_str(), csv_field("skipped: " + r.skipped).c_str());
  } else {
    std::vector<double> us = r.unblocked_us;
    std::sort(us.begin(), us.end());
    const std::string max_us = us.empty() ? "-" : fmt("%.1f", us.back());
    const std::string median_us = us.empty() ? "-" : fmt("%.1f", us[us.size() / 2]);
    const auto at = [](const block_point& b) { return std::to_string(b.call); };
    const auto in = [](const block_point& b) { return b.in; };
    const auto held = [](const block_point& b) { return fmt("%.1f", b.blocked_for_ms); };
    const auto back = [](const block_point& b) { return fmt("%.2f", b.returned_after_release_ms); };
    const char* result = r.blocks.empty() ? "never blocked" : "BLOCKS";
    std::string errors = std::to_string(r.errors);
    if (r.errors > 0) errors += "(" + r.first_error + ")";
    std::printf(
        "case=%s calls=%s count=%d completed=%d blocked_at=%s blocked_in=%s blocked_for_ms=%s "
        "returned_after_release_ms=%s max_unblocked_us=%s median_unblocked_us=%s errors=%s%s "
        "result=%s\n",
        r.name.c_str(), r.calls.c_str(), r.count, r.completed, joined(r, ",", "none", at).c_str(),
        joined(r, ",", "-", in).c_str(), joined(r, ",", "-", held).c_str(),
        joined(r, ",", "-", back).c_str(), max_us.c_str(), median_us.c_str(), errors.c_str(),
        r.notes.c_str(), result);
    if (csv_file != nullptr) {
      const std::string notes = r.notes.empty() ? "" : r.notes.substr(1);
      std::fprintf(csv_file, "%s,%s,%s,%d,%d,%s,%s,%s,%s,%s,%s,%d,%s,%s,%s\n",
                   csv_field(connections()).c_str(), csv_field(r.name).c_str(),
                   csv_field(r.calls).c_str(), r.count, r.completed,
                   joined(r, ";", "none", at).c_str(), csv_field(joined(r, ";", "", in)).c_str(),
                   joined(r, ";", "", held).c_str(), joined(r, ";", "", back).c_str(),
                   max_us.c_str(), median_us.c_str(), r.errors, csv_field(r.first_error).c_str(),
                   csv_field(notes).c_str(), result);
    }
  }
  std::fflush(stdout);
  if (csv_file != nullptr) std::fflush(csv_file);
}

// ---------------------------------------------------------------------------
// Set-up helpers (before the hold: they exit on failure) and clean-up (after
// the hold is released and the device drained: failures ignored).

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

using results = std::vector<phase_result>;

// ---------------------------------------------------------------------------
// The cases: each makes what it needs before the hold, holds, runs its calls,
// and cleans up once the hold is gone.

results stream_create(probe_env& env) {
  std::vector<cudaStream_t> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "stream_create", "cudaStreamCreateWithFlags(NonBlocking)", env.opt.count,
                  create_stream_into(made));
  }
  destroy(made);
  if (!r.blocks.empty()) env.create_block = r.blocks.front().call;
  return {r};
}

results stream_create_priority(probe_env& env) {
  int least = 0, greatest = 0;
  check(cudaDeviceGetStreamPriorityRange(&least, &greatest), "cudaDeviceGetStreamPriorityRange");
  std::vector<cudaStream_t> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(
        h, env, "stream_create_priority",
        "cudaStreamCreateWithPriority(NonBlocking,greatest=" + std::to_string(greatest) + ")",
        env.opt.count, [&](int, vendor& v) {
          cudaStream_t s{};
          if (v.call("cudaStreamCreateWithPriority", [&] {
                return cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest);
              }))
            made.push_back(s);
        });
  }
  destroy(made);
  return {r};
}

results stream_create_destroy(probe_env& env) {
  hold h(env);
  return {run_calls(h, env, "stream_create_destroy", "cudaStreamCreateWithFlags+cudaStreamDestroy",
                    env.opt.count, [](int, vendor& v) {
                      cudaStream_t s{};
                      if (v.call("cudaStreamCreateWithFlags", [&] {
                            return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
                          }))
                        v.call("cudaStreamDestroy", [&] { return cudaStreamDestroy(s); });
                    })};
}

results stream_destroy(probe_env& env) {
  std::vector<cudaStream_t> streams = make_streams(env.opt.count);
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "stream_destroy", "cudaStreamDestroy(made_before_the_hold)",
                  env.opt.count, destroy_stream_of(streams));
  }
  destroy(streams);
  return {r};
}

//! Streams made before the hold; each, in its turn, waits on an event recorded
//! behind the hold (recorded again behind each renewed hold) and is destroyed
//! with that wait pending.
results stream_destroy_busy(probe_env& env) {
  std::vector<cudaStream_t> streams = make_streams(env.opt.count);
  cudaEvent_t gate{};
  check(cudaEventCreateWithFlags(&gate, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  phase_result r;
  {
    hold h(env, [&gate](cudaStream_t held) {
      check(cudaEventRecord(gate, held), "cudaEventRecord(behind the hold)");
    });
    r = run_calls(h, env, "stream_destroy_busy",
                  "cudaStreamWaitEvent(event_behind_the_hold)+cudaStreamDestroy", env.opt.count,
                  [&](int i, vendor& v) {
                    if (v.call("cudaStreamWaitEvent",
                               [&] { return cudaStreamWaitEvent(streams[i], gate, 0); }) &&
                        v.call("cudaStreamDestroy", [&] { return cudaStreamDestroy(streams[i]); }))
                      streams[i] = nullptr;
                  });
  }
  destroy(streams);
  (void)cudaEventDestroy(gate);
  return {r};
}

results event_create_with(probe_env& env, const char* name, unsigned flags, const char* calls) {
  std::vector<cudaEvent_t> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, name, calls, env.opt.count, [&](int, vendor& v) {
      cudaEvent_t e{};
      if (v.call("cudaEventCreateWithFlags", [&] { return cudaEventCreateWithFlags(&e, flags); }))
        made.push_back(e);
    });
  }
  destroy(made);
  return {r};
}

results event_create(probe_env& env) {
  return event_create_with(env, "event_create", cudaEventDisableTiming,
                           "cudaEventCreateWithFlags(DisableTiming)");
}

results event_create_timing(probe_env& env) {
  return event_create_with(env, "event_create_timing", cudaEventDefault,
                           "cudaEventCreateWithFlags(Default)");
}

results event_destroy(probe_env& env) {
  std::vector<cudaEvent_t> events = make_events(env.opt.count, cudaEventDisableTiming);
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "event_destroy", "cudaEventDestroy(made_before_the_hold)", env.opt.count,
                  [&](int i, vendor& v) {
                    if (v.call("cudaEventDestroy", [&] { return cudaEventDestroy(events[i]); }))
                      events[i] = nullptr;
                  });
  }
  destroy(events);
  return {r};
}

//! sluice's original scenario: an event recorded on the held stream and
//! waited for by another stream (made before the hold), one pair per call.
results event_record_wait(probe_env& env) {
  std::vector<cudaStream_t> streams = make_streams(env.opt.count);
  std::vector<cudaEvent_t> events = make_events(env.opt.count, cudaEventDisableTiming);
  phase_result r;
  {
    hold h(env);
    r = run_calls(
        h, env, "event_record_wait",
        "cudaEventRecord(held)+cudaStreamWaitEvent(stream_made_before_the_hold)", env.opt.count,
        [&](int i, vendor& v) {
          if (v.call("cudaEventRecord", [&] { return cudaEventRecord(events[i], h.stream()); }))
            v.call("cudaStreamWaitEvent",
                   [&] { return cudaStreamWaitEvent(streams[i], events[i], 0); });
        });
  }
  destroy(streams);
  destroy(events);
  return {r};
}

void empty_callback(void*) {}

//! Host functions pending behind the hold on many streams: each stream (made
//! before the hold) waits on an event recorded behind the hold, then gets a
//! cudaLaunchHostFunc. Found through sluice's IND-4 test on an H200: the
//! 57th such call waited for the held stream.
results host_func_many_streams(probe_env& env) {
  std::vector<cudaStream_t> streams = make_streams(env.opt.count);
  cudaEvent_t behind{};
  check(cudaEventCreateWithFlags(&behind, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  phase_result r;
  {
    hold h(env);
    check(cudaEventRecord(behind, h.stream()), "cudaEventRecord");
    r = run_calls(h, env, "host_func_many_streams",
                  "cudaStreamWaitEvent(event_behind_the_hold)+cudaLaunchHostFunc(stream_made_"
                  "before_the_hold)",
                  env.opt.count, [&](int i, vendor& v) {
                    if (v.call("cudaStreamWaitEvent",
                               [&] { return cudaStreamWaitEvent(streams[i], behind, 0); }))
                      v.call("cudaLaunchHostFunc", [&] {
                        return cudaLaunchHostFunc(streams[i], empty_callback, nullptr);
                      });
                  });
  }
  destroy(streams);
  (void)cudaEventDestroy(behind);
  return {r};
}

//! Host functions pending behind the hold on the held stream itself.
results host_func_held_stream(probe_env& env) {
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "host_func_held_stream", "cudaLaunchHostFunc(held)", env.opt.count,
                  [&](int, vendor& v) {
                    v.call("cudaLaunchHostFunc",
                           [&] { return cudaLaunchHostFunc(h.stream(), empty_callback, nullptr); });
                  });
  }
  return {r};
}

//! Device work enqueued behind the hold on the held stream itself, one kind
//! per phase: a fill (cudaMemsetAsync), copies between device and pinned
//! memory and within the device. With CUDA_LAUNCH_BLOCKING=1 set this shows
//! which of them the runtime makes wait for the stream.
results enqueue_held_stream(probe_env& env) {
  constexpr std::size_t bytes = 64 * 1024;
  void* device = nullptr;
  void* device2 = nullptr;
  void* pinned = nullptr;
  check(cudaMalloc(&device, bytes), "cudaMalloc");
  check(cudaMalloc(&device2, bytes), "cudaMalloc");
  check(cudaHostAlloc(&pinned, bytes, cudaHostAllocDefault), "cudaHostAlloc");
  results out;
  const std::pair<const char*, cudaMemcpyKind> copies[] = {
      {"cudaMemcpyAsync(device_to_pinned)", cudaMemcpyDeviceToHost},
      {"cudaMemcpyAsync(pinned_to_device)", cudaMemcpyHostToDevice},
      {"cudaMemcpyAsync(device_to_device)", cudaMemcpyDeviceToDevice}};
  {
    hold h(env);
    out.push_back(run_calls(h, env, "enqueue_held_stream", "cudaMemsetAsync(held)", env.opt.count,
                            [&](int, vendor& v) {
                              v.call("cudaMemsetAsync", [&] {
                                return cudaMemsetAsync(device, 1, bytes, h.stream());
                              });
                            }));
  }
  for (const auto& [name, kind] : copies) {
    hold h(env);
    out.push_back(run_calls(h, env, "enqueue_held_stream", name, env.opt.count, [&](int, vendor& v) {
      v.call("cudaMemcpyAsync", [&, kind = kind] {
        void* dst = kind == cudaMemcpyDeviceToHost ? pinned : device;
        const void* src = kind == cudaMemcpyHostToDevice ? pinned : device2;
        return cudaMemcpyAsync(dst, src, bytes, kind, h.stream());
      });
    }));
  }
  (void)cudaFreeHost(pinned);
  (void)cudaFree(device2);
  (void)cudaFree(device);
  return out;
}

results host_alloc(probe_env& env) {
  std::vector<void*> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "host_alloc", "cudaHostAlloc(4KiB,Mapped|Portable)", env.opt.count,
                  [&](int, vendor& v) {
                    void* p = nullptr;
                    if (v.call("cudaHostAlloc", [&] {
                          return cudaHostAlloc(&p, 4096,
                                               cudaHostAllocMapped | cudaHostAllocPortable);
                        }))
                      made.push_back(p);
                  });
  }
  free_host(made);
  return {r};
}

results host_free(probe_env& env) {
  std::vector<void*> blocks(static_cast<std::size_t>(env.opt.count));
  for (auto& p : blocks)
    check(cudaHostAlloc(&p, 4096, cudaHostAllocMapped | cudaHostAllocPortable), "cudaHostAlloc");
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "host_free", "cudaFreeHost(4KiB_made_before_the_hold)", env.opt.count,
                  [&](int i, vendor& v) {
                    if (v.call("cudaFreeHost", [&] { return cudaFreeHost(blocks[i]); }))
                      blocks[i] = nullptr;
                  });
  }
  free_host(blocks);
  return {r};
}

results malloc_case(probe_env& env) {
  std::vector<void*> made;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "malloc", "cudaMalloc(1MiB)", env.opt.count, [&](int, vendor& v) {
      void* p = nullptr;
      if (v.call("cudaMalloc", [&] { return cudaMalloc(&p, mib); })) made.push_back(p);
    });
  }
  free_device(made);
  return {r};
}

results free_case(probe_env& env) {
  std::vector<void*> blocks = make_device_blocks(env.opt.count, mib);
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "free", "cudaFree(1MiB_made_before_the_hold)", env.opt.count,
                  [&](int i, vendor& v) {
                    if (v.call("cudaFree", [&] { return cudaFree(blocks[i]); }))
                      blocks[i] = nullptr;
                  });
  }
  free_device(blocks);
  return {r};
}

//! A memory pool made, used once on a stream that is not held, and destroyed,
//! per call.
results pool(probe_env& env) {
  cudaStream_t s{};
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaMemPoolProps props{};
  props.allocType = cudaMemAllocationTypePinned;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = env.opt.device;
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "pool",
                  "cudaMemPoolCreate+cudaMallocFromPoolAsync(1MiB,other_stream)+cudaFreeAsync+"
                  "cudaMemPoolDestroy",
                  env.opt.count, [&](int, vendor& v) {
                    cudaMemPool_t p{};
                    if (!v.call("cudaMemPoolCreate", [&] { return cudaMemPoolCreate(&p, &props); }))
                      return;
                    void* block = nullptr;
                    if (v.call("cudaMallocFromPoolAsync",
                               [&] { return cudaMallocFromPoolAsync(&block, mib, p, s); }))
                      v.call("cudaFreeAsync", [&] { return cudaFreeAsync(block, s); });
                    v.call("cudaMemPoolDestroy", [&] { return cudaMemPoolDestroy(p); });
                  });
  }
  (void)cudaStreamDestroy(s);
  return {r};
}

results malloc_async(probe_env& env) {
  cudaStream_t s{};
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "malloc_async", "cudaMallocAsync(1MiB,other_stream)+cudaFreeAsync",
                  env.opt.count, [&](int, vendor& v) {
                    void* block = nullptr;
                    if (v.call("cudaMallocAsync", [&] { return cudaMallocAsync(&block, mib, s); }))
                      v.call("cudaFreeAsync", [&] { return cudaFreeAsync(block, s); });
                  });
  }
  (void)cudaStreamDestroy(s);
  return {r};
}

//! IPC handles of a cudaMalloc block and of an interprocess event, each made
//! before the hold (a new block and event per call).
results ipc(probe_env& env) {
  std::vector<void*> blocks = make_device_blocks(env.opt.count, mib);
  std::vector<cudaEvent_t> events =
      make_events(env.opt.count, cudaEventInterprocess | cudaEventDisableTiming);
  phase_result r;
  {
    hold h(env);
    r = run_calls(
        h, env, "ipc", "cudaIpcGetMemHandle(1MiB)+cudaIpcGetEventHandle(Interprocess)",
        env.opt.count, [&](int i, vendor& v) {
          cudaIpcMemHandle_t mh{};
          cudaIpcEventHandle_t eh{};
          v.call("cudaIpcGetMemHandle", [&] { return cudaIpcGetMemHandle(&mh, blocks[i]); });
          v.call("cudaIpcGetEventHandle", [&] { return cudaIpcGetEventHandle(&eh, events[i]); });
        });
  }
  free_device(blocks);
  destroy(events);
  return {r};
}

//! Peer access from the probe's device to another, enabled and disabled.
results peer(probe_env& env) {
  if (env.devices < 2) return {skipped("peer", "one device")};
  const int d = env.opt.device;
  const int other = d == 0 ? 1 : 0;
  fresh_context(env, {d, other});
  int can = 0;
  check(cudaDeviceCanAccessPeer(&can, d, other), "cudaDeviceCanAccessPeer");
  if (can == 0)
    return {skipped(
        "peer", "device " + std::to_string(d) + " cannot access device " + std::to_string(other))};
  phase_result r;
  {
    hold h(env);
    r = run_calls(h, env, "peer",
                  "cudaDeviceCanAccessPeer+cudaDeviceEnablePeerAccess+cudaDeviceDisablePeerAccess("
                  "device_" +
                      std::to_string(d) + "_to_" + std::to_string(other) + ")",
                  env.opt.count, [&](int, vendor& v) {
                    int ok = 0;
                    v.call("cudaDeviceCanAccessPeer",
                           [&] { return cudaDeviceCanAccessPeer(&ok, d, other); });
                    if (v.call("cudaDeviceEnablePeerAccess",
                               [&] { return cudaDeviceEnablePeerAccess(other, 0); }))
                      v.call("cudaDeviceDisablePeerAccess",
                             [&] { return cudaDeviceDisablePeerAccess(other); });
                  });
  }
  return {r};
}

//! Under one hold: 64 streams made, all 64 destroyed, 64 made again. Does the
//! second making block again where the first did (does the driver shrink)?
results stream_recreate(probe_env& env) {
  constexpr int n = 64;
  std::vector<cudaStream_t> first, second;
  results out;
  {
    hold h(env);
    out.push_back(run_calls(h, env, "stream_recreate.create",
                            "cudaStreamCreateWithFlags(NonBlocking)", n,
                            create_stream_into(first)));
    out.push_back(run_calls(h, env, "stream_recreate.destroy", "cudaStreamDestroy(all_of_them)",
                            static_cast<int>(first.size()), destroy_stream_of(first)));
    out.push_back(run_calls(h, env, "stream_recreate.create_again",
                            "cudaStreamCreateWithFlags(NonBlocking)", n,
                            create_stream_into(second)));
  }
  destroy(first);
  destroy(second);
  return out;
}

//! Thread A makes the stream that blocked in stream_create (the ones before it
//! made under the same hold); 200 ms later thread B makes 8 calls of one kind
//! on an unrelated stream, under the watchdog. If B blocks, a lock that A holds
//! while it waits is driver-wide. The hold is released at B's first block
//! point (which frees A too) or after B's calls.
phase_result other_thread_while_create_blocks(const probe_env& env, const std::string& kind,
                                              int blocking_create) {
  cudaStream_t unrelated{};
  check(cudaStreamCreateWithFlags(&unrelated, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
  cudaEvent_t event{};
  check(cudaEventCreateWithFlags(&event, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  void* buffer = nullptr;
  check(cudaMalloc(&buffer, mib), "cudaMalloc");
  std::string calls;
  iteration_fn call_b;
  if (kind == "event_record") {
    calls = "cudaEventRecord(unrelated_stream)";
    call_b = [&](int, vendor& v) {
      v.call("cudaEventRecord", [&] { return cudaEventRecord(event, unrelated); });
    };
  } else if (kind == "stream_query") {
    calls = "cudaStreamQuery(unrelated_stream)";
    call_b = [&](int, vendor& v) {
      v.call("cudaStreamQuery", [&] {
        const cudaError_t q = cudaStreamQuery(unrelated);
        return q == cudaErrorNotReady ? cudaSuccess : q;
      });
    };
  } else {
    calls = "cudaMemsetAsync(1MiB,unrelated_stream)";
    call_b = [&](int, vendor& v) {
      v.call("cudaMemsetAsync", [&] { return cudaMemsetAsync(buffer, 0, mib, unrelated); });
    };
  }

  std::vector<cudaStream_t> made;
  phase_result r;
  {
    hold h(env);
    const phase_result before = run_calls(h, env, "lock_during_create.setup", "",
                                          blocking_create - 1, create_stream_into(made));
    std::atomic<bool> a_returned{false};
    clock_type::time_point a_end{};
    cudaStream_t a_stream{};
    cudaError_t a_error = cudaSuccess;
    const auto a_start = clock_type::now();
    std::thread a([&] {
      check(cudaSetDevice(env.opt.device), "cudaSetDevice(thread A)");
      a_error = cudaStreamCreateWithFlags(&a_stream, cudaStreamNonBlocking);
      a_end = clock_type::now();
      a_returned.store(true);
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    const bool a_blocked = !a_returned.load();
    r = run_calls(h, env, "lock_during_create." + kind, calls, 8, call_b, true);
    h.release();
    const auto released = h.released_at();
    while (!a_returned.load()) {
      if (clock_type::now() - released > release_limit)
        give_up(exit_not_returned, "case=lock_during_create." + kind +
                                       " thread A's cudaStreamCreateWithFlags had not returned "
                                       "10 s after the release: giving up");
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    a.join();
    if (a_error == cudaSuccess) made.push_back(a_stream);
    r.notes += " thread_a_create=#" + std::to_string(blocking_create);
    r.notes += " setup_blocked_at=" + joined(before, ",", "none", [](const block_point& b) {
                 return std::to_string(b.call);
               });
    r.notes += std::string(" thread_a_blocked_when_b_started=") + (a_blocked ? "yes" : "NO");
    const double after = ms_between(released, a_end);
    r.notes += after >= 0 ? " thread_a_returned_after_release_ms=" + fmt("%.2f", after)
                          : " thread_a_returned_before_release_after_ms=" +
                                fmt("%.1f", ms_between(a_start, a_end));
    if (a_error != cudaSuccess)
      r.notes += std::string(" thread_a_error=") + cudaGetErrorName(a_error);
  }
  destroy(made);
  (void)cudaStreamDestroy(unrelated);
  (void)cudaEventDestroy(event);
  (void)cudaFree(buffer);
  return r;
}

results lock_during_create(probe_env& env) {
  if (env.create_block == 0)
    return {skipped("lock_during_create", "stream_create found no block point")};
  results out;
  for (const char* kind : {"event_record", "stream_query", "memset_async"}) {
    if (!out.empty()) fresh_context(env, {env.opt.device});  // (main made the first one)
    out.push_back(other_thread_while_create_blocks(env, kind, env.create_block));
  }
  return out;
}

struct case_entry {
  const char* name;
  results (*run)(probe_env&);
};

// In this order (lock_during_create needs stream_create's block point).
const case_entry all_cases[] = {
    {"stream_create", stream_create},
    {"stream_create_priority", stream_create_priority},
    {"stream_create_destroy", stream_create_destroy},
    {"stream_destroy", stream_destroy},
    {"stream_destroy_busy", stream_destroy_busy},
    {"event_create", event_create},
    {"event_create_timing", event_create_timing},
    {"event_destroy", event_destroy},
    {"event_record_wait", event_record_wait},
    {"host_func_many_streams", host_func_many_streams},
    {"host_func_held_stream", host_func_held_stream},
    {"enqueue_held_stream", enqueue_held_stream},
    {"host_alloc", host_alloc},
    {"host_free", host_free},
    {"malloc", malloc_case},
    {"free", free_case},
    {"pool", pool},
    {"malloc_async", malloc_async},
    {"ipc", ipc},
    {"peer", peer},
    {"stream_recreate", stream_recreate},
    {"lock_during_create", lock_during_create},
};

bool wanted(const options& o, const std::string& name) {
  return o.cases.empty() || std::find(o.cases.begin(), o.cases.end(), name) != o.cases.end();
}

int usage() {
  std::fprintf(stderr,
               "usage: sluice-probe-held-calls [--count=N] [--block-ms=M] [--max-blocks=B] "
               "[--cases=a,b,c] [--device=D] [--csv=FILE]\ncases:");
  for (const case_entry& c : all_cases) std::fprintf(stderr, " %s", c.name);
  std::fprintf(stderr, "\n");
  return 2;
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::size_t eq = a.find('=');
    if (eq == std::string::npos) return false;
    const std::string key = a.substr(0, eq);
    const std::string value = a.substr(eq + 1);
    if (key == "--count") {
      o.count = std::atoi(value.c_str());
    } else if (key == "--block-ms") {
      o.block_ms = std::atoi(value.c_str());
    } else if (key == "--max-blocks") {
      o.max_blocks = std::atoi(value.c_str());
    } else if (key == "--device") {
      o.device = std::atoi(value.c_str());
    } else if (key == "--csv") {
      o.csv = value;
    } else if (key == "--cases") {
      for (std::size_t at = 0; at <= value.size();) {
        const std::size_t comma = std::min(value.find(',', at), value.size());
        const std::string name = value.substr(at, comma - at);
        at = comma + 1;
        if (name.empty()) continue;
        if (std::none_of(std::begin(all_cases), std::end(all_cases),
                         [&](const case_entry& c) { return name == c.name; })) {
          std::fprintf(stderr, "sluice-probe-held-calls: unknown case %s\n", name.c_str());
          return false;
        }
        o.cases.push_back(name);
      }
    } else {
      return false;
    }
  }
  return o.count > 0 && o.block_ms > 0 && o.max_blocks > 0 && o.device >= 0;
}

void print_header(const probe_env& env) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, env.opt.device), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  std::string proc = "(none)";
  std::ifstream version("/proc/driver/nvidia/version");
  if (version) std::getline(version, proc);
  std::printf("sluice-probe-held-calls: raw CUDA; which calls block while one stream is held\n");
  std::printf("device %d of %d: %s\n", env.opt.device, env.devices, prop.name);
  std::printf("driver: cudaDriverGetVersion=%d runtime=%d; /proc/driver/nvidia/version: %s\n",
              driver, runtime, proc.c_str());
  std::printf("CUDA_DEVICE_MAX_CONNECTIONS=%s (as inherited; unset means the driver's default)\n",
              connections());
  std::printf(
      "count=%d block_ms=%d max_blocks=%d; each case in a fresh context (cudaDeviceReset)\n",
      env.opt.count, env.opt.block_ms, env.opt.max_blocks);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  raw::program = "sluice-probe-held-calls";
  probe_env env;
  if (!parse(argc, argv, env.opt)) return usage();
  check(cudaGetDeviceCount(&env.devices), "cudaGetDeviceCount");
  if (env.opt.device >= env.devices) {
    std::fprintf(stderr, "sluice-probe-held-calls: --device=%d, but %d device(s)\n", env.opt.device,
                 env.devices);
    return 2;
  }
  check(cudaSetDevice(env.opt.device), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree(0)");
  env.wait = raw::wait_entry();
  print_header(env);
  if (!env.opt.csv.empty()) {
    csv_file = std::fopen(env.opt.csv.c_str(), "w");
    if (csv_file == nullptr) {
      std::fprintf(stderr, "sluice-probe-held-calls: cannot write %s\n", env.opt.csv.c_str());
      return 2;
    }
    std::fprintf(csv_file,
                 "max_connections,case,calls,count,completed,blocked_at,blocked_in,blocked_for_ms,"
                 "returned_after_release_ms,max_unblocked_us,median_unblocked_us,errors,"
                 "first_error,notes,result\n");
  }
  if (wanted(env.opt, "lock_during_create") && !wanted(env.opt, "stream_create")) {
    std::printf("(lock_during_create needs stream_create's block point: stream_create runs too)\n");
    env.opt.cases.push_back("stream_create");
  }
  for (const case_entry& c : all_cases) {
    if (!wanted(env.opt, c.name)) continue;
    fresh_context(env, {env.opt.device});
    for (const phase_result& r : c.run(env)) report(r);
  }
  if (csv_file != nullptr) std::fclose(csv_file);
  return 0;
}
