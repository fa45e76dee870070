// Which path a GPU backend's host function takes (docs/design.md, "Which host
// functions use the word watcher"): the word watcher's signal only where the
// stream has a hardware queue of its own as far as the stream pool knows,
// the vendor's callback otherwise. Counted by
// sluice::detail::host_function_path_counts(). Built per GPU backend into
// sluice-host_path-tests-<backend> (gpu_unit_main.cpp; ctest
// sim.host_path.cuda against the simulated runtime, which runs every stream
// on a thread of its own and so cannot show a shared queue holding a signal
// back: what it checks is the choice, on any device).
#include <sluice/detail/interop.hpp>
#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

sluice::detail::host_function_paths counts() { return sluice::detail::host_function_path_counts(); }

//! The path SLUICE_HOST_FUNC_PATH forces, or "" (auto).
std::string forced() {
  const char* v = std::getenv("SLUICE_HOST_FUNC_PATH");
  return v == nullptr || std::string(v) == "auto" ? std::string() : std::string(v);
}

//! Runs one host function on s and waits for it.
void one_function(sluice::stream& s, std::atomic<int>& ran) {
  s.host_func([&ran] { ran.fetch_add(1); });
  s.synchronize();
}

TEST(HostFunctionPath, AStreamAloneOnItsQueueUsesTheSignal) {
  const sluice::device dev{0};
  sluice::stream s{dev};
  std::atomic<int> ran{0};
  const auto before = counts();
  one_function(s, ran);
  one_function(s, ran);
  const auto after = counts();
  EXPECT_EQ(ran.load(), 2);
  const unsigned long long signal = after.signal - before.signal;
  const unsigned long long callback = after.callback - before.callback;
  if (forced() == "callback") {
    EXPECT_EQ(signal, 0U);
    EXPECT_EQ(callback, 2U);
  } else {
    EXPECT_EQ(signal, 2U) << "a stream alone on the device fell back to the callback";
    EXPECT_EQ(callback, 0U);
  }
}

// One stream more than the device's independent queues: by the pigeonhole,
// two live streams share a queue in the pool's assignment, and each of them
// uses the callback; once the others are gone the survivor has its queue to
// itself again and uses the signal.
TEST(HostFunctionPath, StreamsThatShareAQueueUseTheCallback) {
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
  const unsigned long long signal = after.signal - before.signal;
  const unsigned long long callback = after.callback - before.callback;
  EXPECT_EQ(signal + callback, static_cast<unsigned long long>(limit) + 1);
  if (forced() == "signal") {
    EXPECT_EQ(callback, 0U);
  } else {
    EXPECT_GE(callback, 2U) << limit + 1 << " live streams on " << limit
                            << " queues: the two on one queue must not use the signal";
  }

  // Only the first stream left: its queue is its own again.
  streams.erase(streams.begin() + 1, streams.end());
  const auto alone_before = counts();
  one_function(streams.front(), ran);
  const auto alone_after = counts();
  if (forced() == "callback") {
    EXPECT_EQ(alone_after.callback - alone_before.callback, 1U);
  } else {
    EXPECT_EQ(alone_after.signal - alone_before.signal, 1U)
        << "the stream kept the callback after its queue-mates were destroyed";
  }
}

}  // namespace
