// Which path a GPU backend's host function takes (docs/design.md, "Which host
// functions use the word watcher"; backends/cuda_hip/host_func/host_holds.hpp): the word
// watcher's signal only where no other stream of the device holds for the
// host (a pending host function, a flag wait) when the batch is enqueued,
// sluice's gate kernel otherwise (the vendor's callback where its launch
// fails); never a guess of the vendor's hardware queues.
// Counted by sluice::detail::host_function_path_counts(). Built per GPU
// backend into sluice-host_path-tests-<backend> (gpu_unit_main.cpp; ctest
// sim.host_path.cuda against the simulated runtime). What it checks is the
// choice, on any device; the holding itself: ctest
// sim.conformance.cuda.hw_queues (the simulated runtime's hardware queues).
// Where the test gives the path the process must take
// (SLUICE_TEST_EXPECT_HOST_PATH: a tool that serializes kernel launches sends
// the default's batches to the signal, host_path.hpp) and why
// (SLUICE_TEST_EXPECT_HOST_EVIDENCE), the choice that
// sluice::detail::host_function_path() reports is checked too.
// SLUICE_TEST_LOAD_LIBRARY: a library loaded before any test, as a tool's
// would be.
#include <sluice/detail/interop.hpp>
#include <sluice/sluice.hpp>

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace {

sluice::detail::host_function_paths counts() { return sluice::detail::host_function_path_counts(); }

//! Loads SLUICE_TEST_LOAD_LIBRARY before the first test, so that it is in the
//! process's maps when the backend chooses the path.
class load_library : public testing::Environment {
 public:
  void SetUp() override {
    const char* path = std::getenv("SLUICE_TEST_LOAD_LIBRARY");
    if (path != nullptr && dlopen(path, RTLD_NOW) == nullptr)
      FAIL() << "cannot load " << path << ": " << dlerror();
  }
};
[[maybe_unused]] testing::Environment* const loaded =
    testing::AddGlobalTestEnvironment(new load_library);

//! The path that SLUICE_TEST_EXPECT_HOST_PATH or else SLUICE_HOST_FUNC_PATH
//! forces, or "" (auto): "signal", "kernel" or "callback". Both unset: the
//! backend's default, the gate kernel on CUDA and on HIP's NVIDIA platform,
//! the callback on HIP's AMD platform (docs/api.md, SLUICE_HOST_FUNC_PATH).
std::string forced() {
  const char* v = std::getenv("SLUICE_TEST_EXPECT_HOST_PATH");
  if (v == nullptr) v = std::getenv("SLUICE_HOST_FUNC_PATH");
  if (v == nullptr) {
#if defined(__HIP_PLATFORM_NVIDIA__)
    return "kernel";
#else
    return std::string(sluice::backend_name()) == "cuda" ? "kernel" : "callback";
#endif
  }
  return std::string(v) == "auto" ? std::string() : std::string(v);
}

//! Whether the gate kernel's launches fail here: the fakes fail them on
//! request (SLUICE_SIM_GATE_KERNEL=fail, tests/fake_cudart), and sluice must
//! then take the callback and count the failure.
bool kernel_fails() {
  const char* v = std::getenv("SLUICE_SIM_GATE_KERNEL");
  return v != nullptr && std::string(v) == "fail";
}

//! The path a batch takes under the rule where nothing else holds for the
//! host, and where another stream does (the kernel: the callback where its
//! launch fails).
std::string kernel_or_fallback(const std::string& p) {
  return p == "kernel" && kernel_fails() ? "callback (the kernel's launch failed)" : p;
}
std::string alone_path() { return kernel_or_fallback(forced().empty() ? "signal" : forced()); }
std::string held_path() { return kernel_or_fallback(forced().empty() ? "kernel" : forced()); }

//! Batches of `path` between two counts.
unsigned long long on(const std::string& path, const sluice::detail::host_function_paths& a,
                      const sluice::detail::host_function_paths& b) {
  if (path == "signal") return b.signal - a.signal;
  if (path == "kernel") return b.kernel - a.kernel;
  if (path == "callback (the kernel's launch failed)")
    return std::min(b.callback - a.callback, b.kernel_failures - a.kernel_failures);
  return b.callback - a.callback;
}

// The path and evidence the backend reports are the ones its host functions
// take (the tests below count them).
TEST(HostFunctionPath, TheChosenPathIsReported) {
  const auto chosen = sluice::detail::host_function_path();
  EXPECT_EQ(chosen.path, forced().empty() ? "auto" : forced()) << chosen.evidence;
  if (const char* evidence = std::getenv("SLUICE_TEST_EXPECT_HOST_EVIDENCE")) {
    EXPECT_EQ(chosen.evidence, evidence);
  }
  EXPECT_FALSE(chosen.evidence.empty());
}

//! Runs one host function on s and waits for it.
void one_function(sluice::stream& s, std::atomic<int>& ran) {
  s.host_func([&ran] { ran.fetch_add(1); });
  s.synchronize();
}

TEST(HostFunctionPath, AStreamAloneUsesTheSignal) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  std::atomic<int> ran{0};
  const auto before = counts();
  one_function(s, ran);
  one_function(s, ran);
  const auto after = counts();
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(on(alone_path(), before, after), 2U)
      << "a stream alone on the device did not use the " << alone_path();
  EXPECT_EQ(after.signal + after.kernel + after.callback,
            before.signal + before.kernel + before.callback + 2U);
  // A failed launch is counted, never silent; none where launches succeed.
  EXPECT_EQ(after.kernel_failures - before.kernel_failures,
            alone_path() == "callback (the kernel's launch failed)" ? 2U : 0U);
}

//! A host function that blocks until open() (a latch for host functions).
class blocker {
 public:
  auto waiter() {
    return [this] {
      entered_.store(true);
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [this] { return open_; });
    };
  }
  bool entered() const { return entered_.load(); }
  void open() {
    {
      std::lock_guard<std::mutex> lock(m_);
      open_ = true;
    }
    cv_.notify_all();
  }
  ~blocker() { open(); }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  bool open_ = false;
  std::atomic<bool> entered_{false};
};

//! Polls until pred holds (10 s at most).
template <class Pred>
bool eventually(Pred pred) {
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!pred()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::yield();
  }
  return true;
}

//! The path of one host function enqueued on s now (run to the end).
std::string path_of_next(sluice::stream& s) {
  std::atomic<int> ran{0};
  const auto before = counts();
  one_function(s, ran);
  const auto after = counts();
  const unsigned long long total = after.signal + after.kernel + after.callback - before.signal -
                                   before.kernel - before.callback;
  if (total == 1) {
    if (after.signal != before.signal) return "signal";
    if (after.kernel != before.kernel) return "kernel";
    return after.kernel_failures != before.kernel_failures ? "callback (the kernel's launch failed)"
                                                           : "callback";
  }
  return "several or none (another thread's host functions?)";
}

// While another stream's host function has not returned, its gate wait holds
// that stream for the host; a signal of a stream that shares its hardware
// queue could sit behind it (docs/design.md, "Which host functions use the
// word watcher"), whatever the vendor's queue assignment: new batches of other
// streams take the gate kernel (docs/design.md, "The gate kernel"). Once it
// returned, the signal again.
TEST(HostFunctionPath, AnotherStreamsPendingFunctionSendsOthersToTheGateKernel) {
  const sluice::device dev{0};
  sluice::stream held{dev}, other{dev};
  blocker b;
  held.host_func(b.waiter());
  ASSERT_TRUE(eventually([&] { return b.entered(); }));
  const std::string while_held = path_of_next(other);
  b.open();
  held.synchronize();
  const std::string after = path_of_next(other);
  EXPECT_EQ(while_held, held_path()) << "while another stream's function was pending";
  EXPECT_EQ(after, alone_path()) << "once nothing else was pending";
}

// A stream's own pending function holds only the stream itself: what it
// enqueues later comes after its own gate wait anyway (HOST-1).
TEST(HostFunctionPath, ItsOwnPendingFunctionKeepsTheSignal) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::event e{dev};
  blocker b;
  const auto before = counts();
  s.host_func(b.waiter());
  e.record(s);  // ends the batch: the next function is a batch of its own
  std::atomic<int> ran{0};
  s.host_func([&ran] { ran.fetch_add(1); });
  ASSERT_TRUE(eventually([&] { return b.entered(); }));
  b.open();
  s.synchronize();
  const auto after = counts();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(on(alone_path(), before, after), 2U)
      << "a stream's own pending host function sent its next one off the " << alone_path();
}

// Nor does its own flag wait: the function comes after it anyway.
TEST(HostFunctionPath, ItsOwnFlagWaitKeepsTheSignal) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::flag f{0};
  std::atomic<int> ran{0};
  const auto before = counts();
  s.wait_value(f, 1);
  s.host_func([&ran] { ran.fetch_add(1); });
  f.store(1);
  s.synchronize();
  const auto after = counts();
  EXPECT_EQ(ran.load(), 1);
  EXPECT_EQ(on(alone_path(), before, after), 1U)
      << "a stream's own flag wait sent its host function off the " << alone_path();
}

// A flag wait of another stream holds it for the host until the flag is
// stored: the gate kernel meanwhile, the signal again once it passed.
TEST(HostFunctionPath, AFlagWaitOfAnotherStreamSendsOthersToTheGateKernel) {
  const sluice::device dev{0};
  sluice::stream held{dev}, other{dev};
  sluice::flag f{0};
  held.wait_value(f, 1);
  const std::string while_held = path_of_next(other);
  f.store(1);
  held.synchronize();
  const std::string after = path_of_next(other);
  EXPECT_EQ(while_held, held_path()) << "while another stream waited on a flag";
  EXPECT_EQ(after, alone_path()) << "after the flag wait passed";
}

// Many streams, none holding for the host: every one takes the signal,
// however many share a hardware queue (no guess of the vendor's assignment).
TEST(HostFunctionPath, StreamsBeyondTheQueueCountUseTheSignalWhenNothingHolds) {
  const sluice::device dev{0};
  const int limit = sluice::independent_stream_limit(dev);
  ASSERT_GE(limit, 1);
  ASSERT_LE(limit, 128) << "the GPU backends' limit is the hardware queue count";
  std::vector<sluice::stream> streams;
  for (int i = 0; i <= limit; ++i) streams.emplace_back(dev);
  std::atomic<int> ran{0};
  const auto before = counts();
  for (auto& s : streams) one_function(s, ran);
  const auto after = counts();
  EXPECT_EQ(ran.load(), limit + 1);
  EXPECT_EQ(on(alone_path(), before, after), static_cast<unsigned long long>(limit) + 1)
      << "not every stream used the " << alone_path();
}

}  // namespace
