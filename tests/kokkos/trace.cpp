// Kokkos kernels on sluice's timeline: a kernel launched inside submit() is
// written to the SLUICE trace by its Kokkos name, on its stream's track
// (through the Kokkos Tools callbacks of src/kokkos/kokkos.cpp).
#include <sluice/error.hpp>
#include <sluice/kokkos.hpp>
#include <sluice/trace.hpp>

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

//! The value of "tid" in the first line of json that contains both parts.
//! (No std::regex: GCC 12 warns maybe-uninitialized inside it under -O1 with
//! the sanitizers, and CI builds with -Werror.)
std::string tid_of_line_with(const std::string& json, const std::string& a, const std::string& b) {
  std::istringstream lines(json);
  std::string line;
  const std::string key = "\"tid\": ";
  while (std::getline(lines, line)) {
    if (line.find(a) == std::string::npos || line.find(b) == std::string::npos) continue;
    const std::size_t at = line.find(key);
    if (at == std::string::npos) continue;
    std::size_t end = at + key.size();
    while (end < line.size() && line[end] >= '0' && line[end] <= '9') ++end;
    if (end > at + key.size()) return line.substr(at + key.size(), end - at - key.size());
  }
  return {};
}

using exec_t = sluice::kokkos::execution_space;

//! Two named kernels on exec (outside the TEST body: CUDA's extended lambdas
//! may not live in a private member function).
void traced_kernels(const exec_t& exec, sluice::device_buffer<int>& b) {
  auto v = sluice::kokkos::view(b);
  Kokkos::parallel_for(
      "sluice_kokkos_traced_for", Kokkos::RangePolicy<exec_t>(exec, 0, b.size()),
      KOKKOS_LAMBDA(const std::size_t i) { v(i) = static_cast<int>(i); });
  int sum = 0;
  Kokkos::parallel_reduce(
      "sluice_kokkos_traced_reduce", Kokkos::RangePolicy<exec_t>(exec, 0, b.size()),
      KOKKOS_LAMBDA(const std::size_t i, int& acc) { acc += v(i) & 1; }, sum);
}

TEST(KokkosTrace, KernelsAppearByNameOnTheirStreamsTrack) {
  const std::string path =
      testing::TempDir() + "sluice_kokkos_trace_" + std::to_string(getpid()) + ".json";
  const sluice::device dev{0};
  sluice::stream s{dev,
                   sluice::stream_options{sluice::priority::normal, std::nullopt, "kokkos stream"}};
  sluice::device_buffer<int> b{dev, 4096};
  try {
    sluice::trace_begin(path);
  } catch (const sluice::error& e) {
    if (e.code() == sluice::errc::not_supported) GTEST_SKIP() << "tracing is compiled out";
    throw;
  }
  sluice::fill(s, b.data(), 0, b.size_bytes());
  sluice::kokkos::submit(s, [&b](const exec_t& exec) { traced_kernels(exec, b); });
  s.synchronize();
  const std::size_t operations = sluice::trace_end();
  EXPECT_GE(operations, 3U);
  const std::string json = read_file(path);
  std::remove(path.c_str());
  const std::string track = tid_of_line_with(json, "\"thread_name\"", "kokkos stream");
  ASSERT_FALSE(track.empty()) << "no track for the named stream in the trace";
  for (const char* kernel : {"sluice_kokkos_traced_for", "sluice_kokkos_traced_reduce"}) {
    const std::string on =
        tid_of_line_with(json, std::string("\"name\": \"") + kernel + "\"", "\"cat\": \"op\"");
    EXPECT_EQ(on, track) << kernel << " is not on the stream's track";
  }
  EXPECT_NE(json.find("\"kind\": \"kernel\""), std::string::npos);
}

}  // namespace
