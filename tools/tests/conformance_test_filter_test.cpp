// The --filter of `sluice conformance`: gtest's syntax.
#include "conformance/test_filter.hpp"

#include <gtest/gtest.h>

namespace sluice::tool {
namespace {

TEST(Filters, GtestSyntax) {
  EXPECT_TRUE(matches_filter("Events.EVT_4__x", ""));
  EXPECT_TRUE(matches_filter("Events.EVT_4__x", "*EVT_*"));
  EXPECT_FALSE(matches_filter("Events.EVT_4__x", "*ORD_*"));
  EXPECT_TRUE(matches_filter("Events.EVT_4__x", "*ORD_*:Events.*"));
  EXPECT_FALSE(matches_filter("Events.EVT_4__x", "-*EVT_4*"));
  EXPECT_TRUE(matches_filter("Events.EVT_5__x", "*-*EVT_4*"));
  EXPECT_TRUE(matches_filter("Events.EVT_4__x", "Events.EVT_?__x"));
}

}  // namespace
}  // namespace sluice::tool
