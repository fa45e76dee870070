#include "priority.hpp"

#include <gtest/gtest.h>

namespace {

using sluice::priority;
using sluice::detail::effective_native_priority;
using sluice::detail::level_of;

sluice::stream_options level(priority p) {
  sluice::stream_options o;
  o.priority = p;
  return o;
}
sluice::stream_options native(int v) {
  sluice::stream_options o;
  o.native_priority = v;
  return o;
}

TEST(Priority, CudaHopperRange) {
  const sluice::priority_range r{0, -5};  // least 0, greatest -5
  EXPECT_EQ(effective_native_priority(level(priority::high), r, 0), -5);
  EXPECT_EQ(effective_native_priority(level(priority::normal), r, 0), 0);
  EXPECT_EQ(effective_native_priority(level(priority::low), r, 0), 0);  // CUDA: low == normal
  EXPECT_EQ(effective_native_priority(native(-3), r, 0), -3);
  EXPECT_EQ(effective_native_priority(native(-100), r, 0), -5);  // clamped (PRIO-3)
  EXPECT_EQ(effective_native_priority(native(7), r, 0), 0);
  EXPECT_EQ(level_of(-5, r, 0), priority::high);
  EXPECT_EQ(level_of(-1, r, 0), priority::high);
  EXPECT_EQ(level_of(0, r, 0), priority::normal);
}

TEST(Priority, ThreeLevelRange) {
  const sluice::priority_range r{1, -1};  // HIP and the host backend
  EXPECT_EQ(effective_native_priority(level(priority::high), r, 0), -1);
  EXPECT_EQ(effective_native_priority(level(priority::normal), r, 0), 0);
  EXPECT_EQ(effective_native_priority(level(priority::low), r, 0), 1);
  EXPECT_EQ(level_of(1, r, 0), priority::low);
  EXPECT_EQ(level_of(0, r, 0), priority::normal);
  EXPECT_EQ(level_of(-1, r, 0), priority::high);
  // A native value wins over the portable level.
  auto o = native(5);
  o.priority = priority::high;
  EXPECT_EQ(effective_native_priority(o, r, 0), 1);
}

TEST(Priority, MonotonicForEveryValue) {
  const sluice::priority_range r{0, -5};
  int previous = 1;
  for (int v = 3; v >= -8; --v) {
    const int e = effective_native_priority(native(v), r, 0);
    EXPECT_LE(e, previous);
    EXPECT_GE(e, r.greatest);
    EXPECT_LE(e, r.least);
    previous = e;
  }
}

}  // namespace
