// The GPU trace's source (backends/cuda_hip/trace/activity_tracer.hpp):
// SLUICE_TRACE_SOURCE, the fallback to timing events, and, with CUPTI on a
// GPU, a kernel the user launches on a sluice stream directly, shown on that
// stream's track with its name. SLUICE_TEST_EXPECT_SOURCE (events|cupti)
// says which source this machine must give when CUPTI is asked for: ctest sets
// it (the simulated runtime has no driver, so events; a GPU machine, cupti).
#include <sluice/native.hpp>
#include <sluice/sluice.hpp>

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

bool launch_user_kernel(void* stream, float* p, int n);  // cupti_kernel.cu

namespace {

//! The test's own kernel on s, launched directly (not through sluice). The
//! simulated runtime runs no kernels: there, its stand-in (sim.cpp,
//! sluice_sim_user_kernel), which its CUPTI reports under the kernel's name.
bool launch_kernel(sluice::native_stream_t s, float* p, int n) {
  using sim_kernel = cudaError_t (*)(cudaStream_t, const char*, unsigned);
  if (auto* f = reinterpret_cast<sim_kernel>(dlsym(RTLD_DEFAULT, "sluice_sim_user_kernel")))
    return f(s, "_Z17sluice_test_scalePfi", 200) == cudaSuccess;
  return launch_user_kernel(s, p, n);
}

std::string temp_path(const char* name) {
  return "/tmp/sluice-" + std::to_string(::getpid()) + "-" + name + ".json";
}

std::string end_trace(const std::string& path) {
  sluice::trace_end();
  std::ifstream in(path);
  std::stringstream all;
  all << in.rdbuf();
  std::remove(path.c_str());
  return all.str();
}

std::string expected_source() {
  const char* e = std::getenv("SLUICE_TEST_EXPECT_SOURCE");
  return e != nullptr ? e : "";
}

//! The line (one event per line) that contains `part`; empty if none.
std::string line_with(const std::string& json, const std::string& part) {
  const auto at = json.find(part);
  if (at == std::string::npos) return "";
  const auto from = json.rfind('\n', at);
  const auto to = json.find('\n', at);
  return json.substr(from == std::string::npos ? 0 : from + 1,
                     to == std::string::npos ? std::string::npos : to - from - 1);
}

double number_after(const std::string& line, const std::string& key) {
  const auto at = line.find("\"" + key + "\": ");
  if (at == std::string::npos) return -1;
  return std::strtod(line.c_str() + at + key.size() + 4, nullptr);
}

struct source_env {
  explicit source_env(const char* v) { setenv("SLUICE_TRACE_SOURCE", v, 1); }
  ~source_env() { unsetenv("SLUICE_TRACE_SOURCE"); }
};

TEST(TraceSource, ABadSettingIsRejectedBeforeTracingStarts) {
  const source_env env("banana");
  try {
    sluice::trace_begin(temp_path("bad"));
    ADD_FAILURE() << "trace_begin accepted SLUICE_TRACE_SOURCE=banana";
    sluice::trace_end();
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), sluice::errc::invalid_argument);
    EXPECT_NE(std::string(e.what()).find("SLUICE_TRACE_SOURCE"), std::string::npos);
  }
  EXPECT_FALSE(sluice::tracing());
}

TEST(TraceSource, EventsWhenAskedAndTheAskedSourceOrTheReasonOtherwise) {
  const std::string expect = expected_source();
  ASSERT_TRUE(expect == "events" || expect == "cupti") << "set SLUICE_TEST_EXPECT_SOURCE";
  const sluice::device d(0);
  sluice::device_buffer<unsigned char> b(d, 1 << 20);
  const sluice::stream s(d);
  for (const char* asked : {"events", "cupti"}) {
    const source_env env(asked);
    const std::string path = temp_path(asked);
    sluice::trace_begin(path);
    sluice::fill(s, b.data(), 1, b.size());
    s.synchronize();
    const std::string json = end_trace(path);
    const std::string want = std::string(asked) == "events" ? "events" : expect;
    EXPECT_NE(json.find("\"trace_source\": \"" + want + "\""), std::string::npos) << asked;
    if (want == "events" && std::string(asked) == "cupti") {  // why it fell back
      EXPECT_NE(json.find("\"trace_source_note\": \"CUPTI not used: "), std::string::npos);
      const char* note = std::getenv("SLUICE_TEST_EXPECT_NOTE");
      if (note != nullptr) {
        EXPECT_NE(json.find(note), std::string::npos) << json.substr(0, 2000);
      }
    }
    // The fill is in the trace, whatever the source.
    EXPECT_NE(line_with(json, "{\"name\": \"fill\", \"cat\": \"op\""), "") << asked;
  }
}

TEST(CuptiTrace, AKernelLaunchedOnASluiceStreamDirectlyIsOnItsTrackNamed) {
  if (expected_source() != "cupti") GTEST_SKIP() << "CUPTI is not this machine's source";
  const source_env env("cupti");
  const sluice::device d(0);
  constexpr int n = 1 << 20;
  sluice::device_buffer<float> a(d, n);
  const sluice::stream s(d);
  const std::string path = temp_path("user-kernel");
  sluice::trace_begin(path);
  sluice::fill(s, a.data(), 0, a.size() * sizeof(float));
  ASSERT_TRUE(launch_kernel(sluice::native_handle(s), a.data(), n));
  sluice::fill(s, a.data(), 0, a.size() * sizeof(float));
  s.synchronize();
  const std::string json = end_trace(path);
  const std::string kernel = line_with(json, "{\"name\": \"sluice_test_scale(float*, int)\"");
  ASSERT_NE(kernel, "") << json.substr(0, 4000);
  EXPECT_NE(kernel.find("\"kind\": \"kernel\""), std::string::npos) << kernel;
  EXPECT_NE(kernel.find("\"through_sluice\": false"), std::string::npos) << kernel;
  // On the track of the fills around it, between them in time.
  const std::string fill = line_with(json, "{\"name\": \"fill\", \"cat\": \"op\"");
  ASSERT_NE(fill, "");
  EXPECT_EQ(number_after(kernel, "tid"), number_after(fill, "tid"));
  EXPECT_EQ(number_after(kernel, "pid"), number_after(fill, "pid"));
  const double k_start = number_after(kernel, "ts");
  const double f_end = number_after(fill, "ts") + number_after(fill, "dur");
  EXPECT_GE(k_start, f_end) << fill << "\n" << kernel;
  EXPECT_NE(json.find("\"trace_source\": \"cupti\", \"cupti_dropped_records\": 0"),
            std::string::npos);
  EXPECT_NE(json.find("\"clock_error_us\": "), std::string::npos);
}

// Run with SLUICE_SIM_CUPTI_DROP=1 (the simulated runtime's CUPTI drops the
// first device activity): the trace says so, and the operation is left out.
TEST(CuptiDrop, ADroppedRecordIsCountedNotHidden) {
  const char* drop = std::getenv("SLUICE_SIM_CUPTI_DROP");
  if (drop == nullptr || std::string(drop) != "1")
    GTEST_SKIP() << "needs the simulated runtime's CUPTI with SLUICE_SIM_CUPTI_DROP=1 (a real "
                    "CUPTI drops no record on demand)";
  const source_env env("cupti");
  const sluice::device d(0);
  sluice::device_buffer<unsigned char> b(d, 4096);
  const sluice::stream s(d);
  const std::string path = temp_path("drop");
  sluice::trace_begin(path);
  sluice::fill(s, b.data(), 1, b.size());
  sluice::fill(s, b.data(), 2, b.size());
  s.synchronize();
  const std::string json = end_trace(path);
  EXPECT_NE(json.find("\"cupti_dropped_records\": 1, \"operations_left_out\": 1"),
            std::string::npos)
      << json.substr(0, 3000);
  EXPECT_NE(line_with(json, "{\"name\": \"fill\", \"cat\": \"op\""), "");
}

}  // namespace
