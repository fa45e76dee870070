// The settings registry (src/settings.hpp): its declarations hold together,
// and each accessor parses as the call site it serves always did.
#include "settings.hpp"

#include <sluice/error.hpp>

#include <gtest/gtest.h>

#include <climits>
#include <cstdlib>
#include <set>
#include <string>

namespace {

namespace settings = sluice::detail::settings;
using sluice::detail::setting;

//! Sets (or, with null, unsets) a variable for one test, and puts back what was there.
struct scoped_env {
  std::string name;
  bool had = false;
  std::string old;
  scoped_env(const char* n, const char* v) : name(n) {
    if (const char* o = std::getenv(n)) {
      had = true;
      old = o;
    }
    if (v != nullptr)
      ::setenv(n, v, 1);
    else
      ::unsetenv(n);
  }
  ~scoped_env() {
    if (had)
      ::setenv(name.c_str(), old.c_str(), 1);
    else
      ::unsetenv(name.c_str());
  }
};

void expect_invalid(int (*read)(), const char* variable, const char* range) {
  try {
    (void)read();
    ADD_FAILURE() << variable << ": a bad value was accepted";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), sluice::errc::invalid_argument);
    const std::string what = e.what();
    EXPECT_NE(what.find(variable), std::string::npos) << what;
    EXPECT_NE(what.find(range), std::string::npos) << what;
  }
}

TEST(Settings, OneDeclarationPerSettingInOrderWithUniqueNames) {
  std::set<std::string> names;
  std::size_t n = 0;
  for (const settings::declaration* d = settings::begin(); d != settings::end(); ++d, ++n) {
    EXPECT_EQ(static_cast<std::size_t>(d->id), n) << d->name;
    EXPECT_TRUE(names.insert(d->name).second) << d->name << " is declared twice";
    EXPECT_EQ(&settings::declared(d->id), d);
    EXPECT_EQ(settings::find(d->name), d);
    EXPECT_NE(std::string(d->what), "") << d->name;
    EXPECT_NE(std::string(d->exists_in), "") << d->name;
    // sluice's own variables are SLUICE_*; every SLUICE_* one is sluice's.
    EXPECT_EQ(std::string(d->of) == "sluice", std::string(d->name).rfind("SLUICE_", 0) == 0)
        << d->name;
    if (d->type == settings::value_type::integer && d->shown_range == nullptr) {
      EXPECT_LE(d->low, d->high) << d->name;
    }
    // A default shown as a number is the one the accessor uses, in range.
    if (d->type == settings::value_type::integer && d->shown_default == nullptr &&
        d->shown_range == nullptr) {
      EXPECT_GE(d->fallback, d->low) << d->name;
      EXPECT_LE(d->fallback, d->high) << d->name;
    }
  }
  EXPECT_EQ(n, static_cast<std::size_t>(setting::count));
  EXPECT_EQ(settings::find("SLUICE_NOT_A_SETTING"), nullptr);
}

TEST(Settings, ValueIsTheRawTextAndUnsetIsNull) {
  {
    scoped_env e("TMPDIR", nullptr);
    EXPECT_EQ(settings::value(setting::tmpdir), nullptr);
  }
  scoped_env e("TMPDIR", "");
  ASSERT_NE(settings::value(setting::tmpdir), nullptr);
  EXPECT_STREQ(settings::value(setting::tmpdir), "");
  EXPECT_STREQ(settings::value("TMPDIR"), "");
  EXPECT_THROW((void)settings::value("SLUICE_NOT_A_SETTING"), sluice::error);
}

TEST(Settings, IntegersKeepTheirRangesAndDefaults) {
  {
    scoped_env e("SLUICE_HOST_DEVICES", nullptr);
    EXPECT_EQ(settings::host_devices(), 2);
  }
  {
    scoped_env e("SLUICE_HOST_DEVICES", "");
    EXPECT_EQ(settings::host_devices(), 2);
  }
  {
    scoped_env e("SLUICE_HOST_DEVICES", "64");
    EXPECT_EQ(settings::host_devices(), 64);
  }
  for (const char* bad : {"0", "65", "3x", "abc"}) {
    scoped_env e("SLUICE_HOST_DEVICES", bad);
    expect_invalid(&settings::host_devices, "SLUICE_HOST_DEVICES", "1..64");
  }
  {
    scoped_env e("SLUICE_HOST_SLOTS", nullptr);
    EXPECT_EQ(settings::host_slots(7), 7);
  }
  {
    scoped_env e("SLUICE_HOST_SLOTS", "257");
    EXPECT_THROW((void)settings::host_slots(7), sluice::error);
  }
  {
    scoped_env e("SLUICE_HOST_CHAOS", "-1");
    expect_invalid(&settings::host_chaos, "SLUICE_HOST_CHAOS", "0..2147483647");
  }
  {
    scoped_env e("SLUICE_PEER_SM_MAX_KIB", nullptr);
    EXPECT_EQ(settings::peer_sm_max_kib(), -1);
  }
  {
    scoped_env e("SLUICE_PEER_SM_PULL_MAX_KIB", "1048577");
    EXPECT_THROW((void)settings::peer_sm_pull_max_kib(16384), sluice::error);
  }
  {
    scoped_env e("SLUICE_STAGING_CHUNK_KIB", "3");
    expect_invalid(&settings::staging_chunk_kib, "SLUICE_STAGING_CHUNK_KIB", "4..262144");
  }
  {
    scoped_env e("SLUICE_COMM_TIMEOUT_S", nullptr);
    EXPECT_EQ(settings::comm_timeout_s(), 300);
  }
  {
    scoped_env e("SLUICE_COMM_RING_BYTES", nullptr);
    EXPECT_EQ(settings::comm_ring_bytes(), 65536);
  }
  {
    scoped_env e("SLUICE_COMM_SMALL_BYTES", "2147483647");
    EXPECT_EQ(settings::comm_small_bytes(), INT_MAX);
  }
  {
    scoped_env e("SLUICE_COMM_PIECE_BYTES", "1073741825");
    EXPECT_THROW((void)settings::comm_piece_bytes(0), sluice::error);
  }
  {
    scoped_env e("SLUICE_COMM_NCCL_LANES", "17");
    expect_invalid(&settings::comm_nccl_lanes, "SLUICE_COMM_NCCL_LANES", "1..16");
  }
  {
    scoped_env e("CUDA_DEVICE_MAX_CONNECTIONS", "129");
    EXPECT_THROW((void)settings::integer("CUDA_DEVICE_MAX_CONNECTIONS", 8), sluice::error);
  }
  {
    scoped_env e("CUDA_DEVICE_MAX_CONNECTIONS", nullptr);
    EXPECT_EQ(settings::integer("CUDA_DEVICE_MAX_CONNECTIONS", 8), 8);
  }
  EXPECT_THROW((void)settings::integer("TMPDIR", 1), sluice::error);  // not an integer setting
}

TEST(Settings, SwitchesAndChoices) {
  for (const char* on : {"1", "yes", "00"}) {
    scoped_env e("SLUICE_DIAGNOSE", on);
    EXPECT_TRUE(settings::diagnose()) << on;
  }
  for (const char* off : {"", "0"}) {
    scoped_env e("SLUICE_DIAGNOSE", off);
    EXPECT_FALSE(settings::diagnose()) << off;
  }
  {
    scoped_env e("SLUICE_TRACE_SOURCE", "");
    EXPECT_EQ(settings::trace_source(), settings::trace_source_choice::unset);
  }
  {
    scoped_env e("SLUICE_TRACE_SOURCE", "events");
    EXPECT_EQ(settings::trace_source(), settings::trace_source_choice::events);
  }
  {
    scoped_env e("SLUICE_TRACE_SOURCE", "cupti");
    EXPECT_EQ(settings::trace_source(), settings::trace_source_choice::cupti);
  }
  {
    scoped_env e("SLUICE_TRACE_SOURCE", "nvtx");
    try {
      (void)settings::trace_source();
      ADD_FAILURE() << "accepted nvtx";
    } catch (const sluice::error& err) {
      EXPECT_EQ(err.code(), sluice::errc::invalid_argument);
      EXPECT_STREQ(err.what(),
                   "sluice::trace_begin: SLUICE_TRACE_SOURCE=nvtx is neither \"events\" nor "
                   "\"cupti\"");
    }
  }
  {
    scoped_env e("SLUICE_TRACE_COUNTER", "");
    EXPECT_FALSE(settings::trace_counter().has_value());
  }
  {
    scoped_env e("SLUICE_TRACE_COUNTER", "0");
    EXPECT_EQ(settings::trace_counter(), std::optional<bool>(false));
  }
  {
    scoped_env e("SLUICE_TRACE_COUNTER", "2");
    EXPECT_EQ(settings::trace_counter(), std::optional<bool>(true));
  }
  {
    scoped_env e("SLUICE_CUPTI_BUFFERS", "5");
    EXPECT_EQ(settings::cupti_buffers(2), 5U);
  }
  for (const char* bad : {"", "5x", "x"}) {
    scoped_env e("SLUICE_CUPTI_BUFFERS", bad);
    EXPECT_EQ(settings::cupti_buffers(2), 2U) << bad;
  }
  {
    scoped_env e("SLUICE_CUPTI_CORRELATION", "external");
    EXPECT_EQ(settings::cupti_correlation(), settings::cupti_correlation_choice::external);
  }
  {
    scoped_env e("SLUICE_CUPTI_CORRELATION", "none");
    EXPECT_EQ(settings::cupti_correlation(), settings::cupti_correlation_choice::none);
  }
  {
    scoped_env e("SLUICE_CUPTI_CORRELATION", "anything");
    EXPECT_EQ(settings::cupti_correlation(), settings::cupti_correlation_choice::callbacks);
  }
  {
    scoped_env e("SLUICE_CUDA_BATCH_MEMOP", "0");
    EXPECT_FALSE(settings::cuda_batch_memop());
  }
  for (const char* on : {"", "1", "no"}) {
    scoped_env e("SLUICE_CUDA_BATCH_MEMOP", on);
    EXPECT_TRUE(settings::cuda_batch_memop()) << on;
  }
  {
    scoped_env e("SLUICE_HOST_FUNC_PATH", nullptr);
    EXPECT_EQ(settings::host_func_path(), nullptr);
  }
}

TEST(Settings, TextsAreEmptyWhenUnsetOrEmpty) {
  {
    scoped_env e("SLUICE_TEST_MUTATION", nullptr);
    EXPECT_EQ(settings::test_mutation(), "");
  }
  {
    scoped_env e("SLUICE_TEST_MUTATION", "host.ignore_event_waits");
    EXPECT_EQ(settings::test_mutation(), "host.ignore_event_waits");
  }
  {
    scoped_env e("SLUICE_TRACE", "");
    EXPECT_EQ(settings::trace_path(), "");
  }
  {
    scoped_env e("SLUICE_CUPTI_LIBRARY", "libfake.so");
    EXPECT_EQ(settings::cupti_library(), "libfake.so");
  }
  {
    scoped_env e("SLUICE_BACKEND", "cuda");
    EXPECT_EQ(settings::command_backend(), "cuda");
  }
}

}  // namespace
