// SLUICE_DIAGNOSE=1 (src/diagnose.hpp): each warning appears once per call
// site, with what happened and what to do. Run by ctest unit.diagnose with the
// variable set; DiagnoseOff.* runs in the plain unit run, without it.
#include "diagnose.hpp"

#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

namespace {

using sluice::detail::diagnose::kind;
using sluice::detail::diagnose::warnings;

bool diagnosing() {
  const char* v = std::getenv("SLUICE_DIAGNOSE");
  return v != nullptr && std::string(v) == "1";
}

#define SLUICE_REQUIRE_DIAGNOSE() \
  if (!diagnosing()) GTEST_SKIP() << "run through ctest unit.diagnose (SLUICE_DIAGNOSE=1)"

TEST(Diagnose, PageableCopiesWarnOncePerCallSite) {
  SLUICE_REQUIRE_DIAGNOSE();
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<unsigned char> d{dev, 256};
  std::vector<unsigned char> pageable(256, 1);
  const std::size_t before = warnings(kind::pageable_copy);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 3; ++i) sluice::copy(s, d.data(), pageable.data(), 256);  // one site
  sluice::copy(s, pageable.data(), d.data(), 256);                              // another
  s.synchronize();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(kind::pageable_copy), before + 2) << err;
  EXPECT_NE(err.find("sluice: diagnose: pageable_copy at "), std::string::npos) << err;
  EXPECT_NE(err.find("the source is pageable host memory"), std::string::npos) << err;
  EXPECT_NE(err.find("the destination is pageable host memory"), std::string::npos) << err;
  EXPECT_NE(err.find("sluice::pinned_buffer"), std::string::npos) << err;
  // Pinned memory: no warning.
  sluice::pinned_buffer<unsigned char> pinned{256};
  sluice::copy(s, d.data(), pinned.data(), 256);
  s.synchronize();
  EXPECT_EQ(warnings(kind::pageable_copy), before + 2);
}

// Registered memory counts as pinned (MEM-8): no warning for a copy wholly
// inside a registration, contiguous or strided; one for a copy partly inside.
TEST(Diagnose, CopiesInsideRegisteredMemoryDoNotWarn) {
  SLUICE_REQUIRE_DIAGNOSE();
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<unsigned char> d{dev, 1024};
  std::vector<unsigned char> host(2048, 1);
  sluice::registered_host_memory registered{host.data(), 1024};
  const std::size_t before = warnings(kind::pageable_copy);
  testing::internal::CaptureStderr();
  sluice::copy(s, d.data(), host.data(), 1024);
  sluice::copy(s, host.data(), d.data(), 512);
  sluice::copy(s, {host.data(), 64, 0}, {d.data(), 32, 0}, {32, 16, 1});
  s.synchronize();
  const std::string quiet = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(kind::pageable_copy), before) << quiet;
  testing::internal::CaptureStderr();
  sluice::copy(s, host.data() + 512, d.data(), 1024);  // half of it past the registration
  s.synchronize();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(kind::pageable_copy), before + 1) << err;
  EXPECT_NE(err.find("the destination is pageable host memory"), std::string::npos) << err;
}

TEST(Diagnose, AWaitOnANeverRecordedEventWarns) {
  SLUICE_REQUIRE_DIAGNOSE();
  sluice::stream s{sluice::device{0}};
  sluice::event e{sluice::device{0}};
  const std::size_t before = warnings(kind::unrecorded_event_wait);
  testing::internal::CaptureStderr();
  s.wait(e);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(kind::unrecorded_event_wait), before + 1) << err;
  e.record(s);
  s.wait(e);  // recorded now: fine
  s.synchronize();
  EXPECT_EQ(warnings(kind::unrecorded_event_wait), before + 1);
}

TEST(Diagnose, SynchronizeInATightLoopWarns) {
  SLUICE_REQUIRE_DIAGNOSE();
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<unsigned char> d{dev, 64};
  const std::size_t before = warnings(kind::synchronize_loop);
  testing::internal::CaptureStderr();
  for (int i = 0; i < 10; ++i) s.synchronize();  // short loops are fine
  EXPECT_EQ(warnings(kind::synchronize_loop), before);
  // 64 calls in a row, each less than 1 ms after the previous one returned:
  // a loaded machine (CI's sanitizer runs) may preempt this thread for longer
  // now and then, which starts the count again, so the loop goes on until
  // the warning comes, up to 4000 calls.
  for (int i = 0; i < 4000 && warnings(kind::synchronize_loop) == before; ++i) {
    sluice::fill(s, d.data(), static_cast<unsigned char>(i), 64);
    s.synchronize();
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(kind::synchronize_loop), before + 1) << err;
  EXPECT_NE(err.find("stream::synchronize was called 64 times"), std::string::npos) << err;
}

TEST(Diagnose, AnEventRecordedAndNeverUsedWarnsAtDestruction) {
  SLUICE_REQUIRE_DIAGNOSE();
  sluice::stream s{sluice::device{0}};
  const std::size_t before = warnings(kind::event_never_used);
  testing::internal::CaptureStderr();
  {
    sluice::event used{sluice::device{0}};
    used.record(s);
    used.synchronize();
  }
  EXPECT_EQ(warnings(kind::event_never_used), before);
  {
    sluice::event unused{sluice::device{0}};
    unused.record(s);
  }
  s.synchronize();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(kind::event_never_used), before + 1) << err;
}

TEST(Diagnose, AStreamDestroyedWithWorkPendingWarns) {
  SLUICE_REQUIRE_DIAGNOSE();
  sluice::flag gate{0};
  const std::size_t before = warnings(kind::stream_destroyed_busy);
  testing::internal::CaptureStderr();
  { sluice::stream idle{sluice::device{0}}; }
  EXPECT_EQ(warnings(kind::stream_destroyed_busy), before);
  sluice::event done{sluice::device{0}};
  {
    sluice::stream busy{sluice::device{0}};
    busy.wait_value(gate, 1);
    done.record(busy);
  }
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(kind::stream_destroyed_busy), before + 1) << err;
  gate.store(1);
  done.synchronize();
}

TEST(Diagnose, AStagedPeerCopyWarns) {
  SLUICE_REQUIRE_DIAGNOSE();
  if (sluice::device_count() < 3) GTEST_SKIP() << "needs 3 devices (SLUICE_HOST_DEVICES=4)";
  // Devices 1 and 2: no test here enables peer access between them.
  const sluice::device a{1}, b{2};
  sluice::stream s{a};
  sluice::device_buffer<unsigned char> x{a, 4096}, y{b, 4096};
  const std::size_t before = warnings(kind::staged_peer_copy);
  testing::internal::CaptureStderr();
  ASSERT_EQ(sluice::copy_peer(s, y.data(), b, x.data(), a, 4096), sluice::copy_path::staged);
  s.synchronize();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(warnings(kind::staged_peer_copy), before + 1) << err;
  EXPECT_NE(err.find("enable_peer_access"), std::string::npos) << err;
  // The host backend prefers no direction: a pull is not flagged there.
  EXPECT_EQ(warnings(kind::peer_copy_pulled), 0U);
}

// A warning that speaks of a stream names it when it has a name
// (stream_options::name, stream_ref::set_name): a stream destroyed busy, a
// wait on a never-recorded event, and (where the backend prefers a push:
// CUDA) a pull.
TEST(Diagnose, WarningsNameTheStream) {
  SLUICE_REQUIRE_DIAGNOSE();
  sluice::flag gate{0};
  sluice::event done{sluice::device{0}};
  sluice::stream_options upload;
  upload.name = "upload";
  testing::internal::CaptureStderr();
  {
    sluice::stream busy{sluice::device{0}, upload};
    busy.wait_value(gate, 1);
    done.record(busy);
  }
  sluice::stream waiting{sluice::device{0}};
  waiting.set_name("waits early");
  sluice::event never{sluice::device{0}};
  waiting.wait(never);
  std::string err = testing::internal::GetCapturedStderr();
  gate.store(1);
  done.synchronize();
  EXPECT_NE(err.find(": stream 'upload' of device 0 was destroyed with work pending. "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find(": stream 'waits early' of device 0 waited on an event that was never "
                     "recorded"),
            std::string::npos)
      << err;
  // An unnamed stream is still "a stream".
  sluice::stream unnamed{sluice::device{0}};
  testing::internal::CaptureStderr();
  unnamed.wait(never);
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find(": a stream of device 0 waited on an event that was never recorded"),
            std::string::npos)
      << err;
  if (sluice::device_count() < 2 || std::string(sluice::backend_name()) != "cuda") return;
  const sluice::device d0{0}, d1{1};
  sluice::stream_options pull;
  pull.name = "pulls";
  sluice::stream s{d1, pull};
  sluice::device_buffer<unsigned char> x{d0, 4096}, y{d1, 4096};
  testing::internal::CaptureStderr();
  (void)sluice::copy_peer(s, y.data(), d1, x.data(), d0, 4096);  // on the destination's stream
  s.synchronize();
  err = testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("was issued on stream 'pulls' of the destination device (a pull)"),
            std::string::npos)
      << err;
}

TEST(DiagnoseOff, NothingIsReportedWithoutTheVariable) {
  if (diagnosing()) GTEST_SKIP() << "SLUICE_DIAGNOSE is set in this run";
  sluice::stream s{sluice::device{0}};
  sluice::event e{sluice::device{0}};
  std::vector<unsigned char> pageable(64, 1);
  sluice::device_buffer<unsigned char> d{sluice::device{0}, 64};
  testing::internal::CaptureStderr();
  s.wait(e);
  sluice::copy(s, d.data(), pageable.data(), 64);
  for (int i = 0; i < 100; ++i) s.synchronize();
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("diagnose"), std::string::npos) << err;
  for (int k = 0; k < static_cast<int>(kind::count); ++k)
    EXPECT_EQ(warnings(static_cast<kind>(k)), 0U)
        << sluice::detail::diagnose::name(static_cast<kind>(k));
}

}  // namespace
