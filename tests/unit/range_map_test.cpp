// The range map of sluice allocations, including its per-thread cache.
#include "range_map.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <thread>
#include <vector>

namespace {

using sluice::detail::range_map;

TEST(RangeMap, FindsTheAllocationAndItsOffset) {
  range_map m;
  std::vector<unsigned char> a(100), b(50);
  m.add(a.data(), a.size(), &a, 0);
  m.add(b.data(), b.size(), &b, -1);
  const auto l = m.find(a.data() + 10, 90);
  EXPECT_EQ(l.owner, &a);
  EXPECT_FALSE(l.overrun);
  EXPECT_EQ(l.size, 100U);
  EXPECT_EQ(l.offset, 10U);
  EXPECT_EQ(l.device, 0);
  EXPECT_EQ(m.find(b.data(), 1).device, -1);
}

TEST(RangeMap, ARangePastTheEndIsAnOverrun) {
  range_map m;
  std::vector<unsigned char> a(100);
  m.add(a.data(), a.size(), &a, 1);
  EXPECT_TRUE(m.find(a.data() + 10, 91).overrun);
  EXPECT_FALSE(m.find(a.data() + 99, 1).overrun);
  const auto [d, s] = m.find(a.data(), a.data() + 50, 51);
  EXPECT_FALSE(d.overrun);
  EXPECT_TRUE(s.overrun);
}

TEST(RangeMap, MemoryOutsideEveryAllocationHasNoOwner) {
  range_map m;
  std::vector<unsigned char> a(100);
  m.add(a.data() + 10, 20, &a, 0);
  EXPECT_EQ(m.find(a.data(), 5).owner, nullptr);       // the gap before
  EXPECT_EQ(m.find(a.data() + 30, 5).owner, nullptr);  // the gap after
  EXPECT_EQ(m.find(a.data() + 29, 1).owner, &a);
}

// The cached answer must not survive a change of the map.
TEST(RangeMap, ChangesInvalidateCachedAnswers) {
  range_map m;
  std::vector<unsigned char> a(100);
  EXPECT_EQ(m.find(a.data() + 5, 1).owner, nullptr);  // caches the gap
  m.add(a.data(), a.size(), &a, 0);
  EXPECT_EQ(m.find(a.data() + 5, 1).owner, &a);  // caches the allocation
  m.remove(a.data());
  EXPECT_EQ(m.find(a.data() + 5, 1).owner, nullptr);
  m.add(a.data(), 50, &a, 2);  // same address, smaller
  const auto l = m.find(a.data() + 5, 50);
  EXPECT_EQ(l.device, 2);
  EXPECT_TRUE(l.overrun);
}

// A change made by another thread is seen once it happened before the lookup.
TEST(RangeMap, ChangesByAnotherThreadInvalidateThisThreadsCache) {
  range_map m;
  std::vector<unsigned char> a(100);
  m.add(a.data(), a.size(), &a, 0);
  EXPECT_EQ(m.find(a.data(), 1).owner, &a);
  std::thread([&] { m.remove(a.data()); }).join();
  EXPECT_EQ(m.find(a.data(), 1).owner, nullptr);
}

// Two maps never answer from each other's cache entries.
TEST(RangeMap, CachesAreKeptPerMap) {
  range_map m1, m2;
  std::vector<unsigned char> a(100);
  m1.add(a.data(), a.size(), &a, 0);
  EXPECT_EQ(m1.find(a.data(), 1).owner, &a);
  EXPECT_EQ(m2.find(a.data(), 1).owner, nullptr);
}

}  // namespace
