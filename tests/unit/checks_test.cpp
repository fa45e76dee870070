#include "checks.hpp"

#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace {

template <class F>
sluice::error catch_error(F&& f) {
  try {
    f();
  } catch (const sluice::error& e) {
    return e;
  }
  ADD_FAILURE() << "no sluice::error thrown";
  return sluice::error(sluice::errc::backend_failure, "none");
}

TEST(Checks, CheckedBytesRejectsOverflow) {
  EXPECT_EQ(sluice::detail::checked_bytes(10, 8, "op"), 80U);
  EXPECT_EQ(sluice::detail::checked_bytes(0, 8, "op"), 0U);
  const auto max = std::numeric_limits<std::size_t>::max();
  auto e =
      catch_error([&] { sluice::detail::checked_bytes(max / 8 + 1, 8, "sluice::device_buffer"); });
  EXPECT_EQ(e.code(), sluice::errc::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("sluice::device_buffer"), std::string::npos);
  EXPECT_STREQ(e.api(), "sluice::device_buffer");
}

TEST(Checks, PointerRange) {
  int x = 0;
  sluice::detail::check_pointer_range(nullptr, 0, "op", "dst");  // zero bytes: fine
  sluice::detail::check_pointer_range(&x, sizeof x, "op", "dst");
  auto e =
      catch_error([] { sluice::detail::check_pointer_range(nullptr, 4, "sluice::copy", "dst"); });
  EXPECT_EQ(e.code(), sluice::errc::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("dst is null"), std::string::npos);
  const auto* high = reinterpret_cast<const void*>(std::numeric_limits<std::uintptr_t>::max() - 3);
  e = catch_error([&] { sluice::detail::check_pointer_range(high, 16, "sluice::copy", "src"); });
  EXPECT_EQ(e.code(), sluice::errc::invalid_argument);
  EXPECT_NE(std::string(e.what()).find("overflows"), std::string::npos);
  sluice::detail::check_pointer_range(high, 4, "op", "src");  // ends exactly at the top
}

TEST(Checks, Overlap) {
  char buf[64] = {};
  sluice::detail::check_no_overlap(buf, buf + 32, 32, "op");
  sluice::detail::check_no_overlap(buf + 32, buf, 32, "op");
  EXPECT_EQ(catch_error([&] { sluice::detail::check_no_overlap(buf, buf + 31, 32, "op"); }).code(),
            sluice::errc::invalid_argument);
  EXPECT_EQ(catch_error([&] { sluice::detail::check_no_overlap(buf + 31, buf, 32, "op"); }).code(),
            sluice::errc::invalid_argument);
  EXPECT_EQ(catch_error([&] { sluice::detail::check_no_overlap(buf, buf, 1, "op"); }).code(),
            sluice::errc::invalid_argument);
}

// check_copy_ranges is inline and checks everything at once; on failure it
// must report exactly what the one-by-one checks report, and pass exactly
// when they all pass.
TEST(Checks, CopyRangesAgreeWithTheSingleChecks) {
  static unsigned char buf[256];
  const auto max = std::numeric_limits<std::uintptr_t>::max();
  auto* top = reinterpret_cast<unsigned char*>(max - 15);  // 16 bytes below the end
  struct one {
    const void* dst;
    const void* src;
    std::size_t bytes;
  };
  const one cases[] = {{buf, buf + 64, 64}, {buf + 64, buf, 64},  {buf, buf + 63, 64},
                       {buf + 63, buf, 64}, {buf, buf, 1},        {buf, buf, 0},
                       {nullptr, buf, 8},   {buf, nullptr, 8},    {nullptr, nullptr, 0},
                       {top, buf, 16},      {top, buf, 17},       {buf, top, 17},
                       {top, top - 32, 16}, {buf, buf + 128, max}};
  for (const one& c : cases) {
    std::string single, combined;
    try {
      sluice::detail::check_pointer_range(c.dst, c.bytes, "op", "dst");
      sluice::detail::check_pointer_range(c.src, c.bytes, "op", "src");
      sluice::detail::check_no_overlap(c.dst, c.src, c.bytes, "op");
    } catch (const sluice::error& e) {
      single = e.what();
    }
    try {
      sluice::detail::check_copy_ranges(c.dst, c.src, c.bytes, "op");
    } catch (const sluice::error& e) {
      combined = e.what();
    }
    EXPECT_EQ(combined, single) << "dst " << c.dst << ", src " << c.src << ", " << c.bytes
                                << " bytes";
  }
}

TEST(Errors, CarriesEverything) {
  const sluice::error e(sluice::errc::device_fault, "msg", 700, "cudaStreamSynchronize", true);
  EXPECT_EQ(e.code(), sluice::errc::device_fault);
  EXPECT_EQ(e.native_code(), 700);
  EXPECT_STREQ(e.api(), "cudaStreamSynchronize");
  EXPECT_TRUE(e.sticky());
  EXPECT_STREQ(e.what(), "msg");
  const sluice::error n(sluice::errc::not_ready, "x", 0, nullptr);
  EXPECT_STREQ(n.api(), "");
}

TEST(Errors, Names) {
  EXPECT_STREQ(sluice::to_string(sluice::errc::invalid_handle), "invalid_handle");
  EXPECT_STREQ(sluice::to_string(sluice::errc::host_function_failed), "host_function_failed");
  EXPECT_STREQ(sluice::to_string(sluice::link_kind::host_memory), "host_memory");
  EXPECT_STREQ(sluice::to_string(sluice::copy_path::staged), "staged");
}

}  // namespace
