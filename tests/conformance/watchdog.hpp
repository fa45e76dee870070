// A GoogleTest listener that turns a hanging conformance test into a named
// failure: a test still running after SLUICE_CONFORMANCE_TEST_TIMEOUT seconds
// (default 300; 0 turns the watchdog off) is named on stderr and the process
// exits with 124 (what timeout(1) returns), instead of hanging until someone
// kills it without knowing where. Used by sluice-conformance-<backend> and by
// `sluice conformance`.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include <unistd.h>

namespace sluice::conformance {

class test_watchdog : public ::testing::EmptyTestEventListener {
 public:
  explicit test_watchdog(std::chrono::seconds limit) : limit_(limit) {
    thread_ = std::thread([this] { watch(); });
  }
  ~test_watchdog() override { stop(); }
  test_watchdog(const test_watchdog&) = delete;
  test_watchdog& operator=(const test_watchdog&) = delete;

  //! The limit from SLUICE_CONFORMANCE_TEST_TIMEOUT (seconds; 0: no watchdog).
  static std::chrono::seconds limit_from_environment() {
    const char* v = std::getenv("SLUICE_CONFORMANCE_TEST_TIMEOUT");
    if (v == nullptr || *v == '\0') return std::chrono::seconds(300);
    char* end = nullptr;
    const long s = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || s < 0) {
      std::fprintf(stderr,
                   "SLUICE_CONFORMANCE_TEST_TIMEOUT=%s is not a number of seconds: using 300\n", v);
      return std::chrono::seconds(300);
    }
    return std::chrono::seconds(s);
  }

  void OnTestStart(const ::testing::TestInfo& info) override {
    std::lock_guard<std::mutex> lock(m_);
    running_ = std::string(info.test_suite_name()) + "." + info.name();
    started_ = std::chrono::steady_clock::now();
  }
  void OnTestEnd(const ::testing::TestInfo&) override {
    std::lock_guard<std::mutex> lock(m_);
    running_.clear();
  }
  void OnTestProgramEnd(const ::testing::UnitTest&) override { stop(); }

 private:
  void watch() {
    std::unique_lock<std::mutex> lock(m_);
    while (!stopping_) {
      cv_.wait_for(lock, std::chrono::seconds(1));
      if (running_.empty() || stopping_) continue;
      const auto ran = std::chrono::steady_clock::now() - started_;
      if (ran < limit_) continue;
      std::fflush(stdout);
      std::fprintf(
          stderr,
          "\nsluice conformance: %s has run for %lld s "
          "(SLUICE_CONFORMANCE_TEST_TIMEOUT=%lld): it hangs; stopping the run (exit 124)\n",
          running_.c_str(),
          static_cast<long long>(std::chrono::duration_cast<std::chrono::seconds>(ran).count()),
          static_cast<long long>(limit_.count()));
      std::fflush(stderr);
      // SLUICE_CONFORMANCE_HANG_COMMAND: run before exiting, "%p" replaced by
      // this process's id (scripts/gpu-check prints every thread's stack with gdb).
      if (const char* cmd = std::getenv("SLUICE_CONFORMANCE_HANG_COMMAND");
          cmd != nullptr && *cmd != '\0') {
        std::string line = cmd;
        const std::string pid = std::to_string(static_cast<long long>(::getpid()));
        for (std::size_t at = line.find("%p"); at != std::string::npos; at = line.find("%p", at))
          line.replace(at, 2, pid);
        (void)std::system(line.c_str());
      }
      std::_Exit(124);
    }
  }

  void stop() {
    {
      std::lock_guard<std::mutex> lock(m_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (thread_.joinable()) thread_.join();
  }

  std::chrono::seconds limit_;
  std::mutex m_;
  std::condition_variable cv_;
  std::string running_;
  std::chrono::steady_clock::time_point started_{};
  bool stopping_ = false;
  std::thread thread_;
};

//! Appends a watchdog to GoogleTest's listeners, unless the limit is 0.
inline void install_watchdog() {
  const auto limit = test_watchdog::limit_from_environment();
  if (limit.count() == 0) return;
  ::testing::UnitTest::GetInstance()->listeners().Append(new test_watchdog(limit));
}

}  // namespace sluice::conformance
