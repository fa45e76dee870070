// libFuzzer target: the trace reader and the analysis of `sluice trace report`
// (everything but gnuplot) on arbitrary bytes. Built with -DSLUICE_FUZZ=ON
// (clang only); run by .ci/run for a bounded time under ASan and UBSan,
// seeded from tools/tests/corpus and docs/traces:
//   build-fuzz/tools/sluice-fuzz-trace-report -max_total_time=60 <work dir> tools/tests/corpus
// A malformed trace must throw std::runtime_error; anything else (a crash, a
// leak, a sanitizer report, another exception) is a finding.
#include "trace/analyzer.hpp"
#include "trace/reader.hpp"
#include "trace/report.hpp"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  // The first byte sets how many bytes each read returns (1 to 64, or whole
  // blocks), so events and strings fall across the reader's block boundaries.
  std::size_t piece = SIZE_MAX;
  if (size > 0) {
    if (data[0] < 128) piece = 1 + data[0] % 64;
    ++data;
    --size;
  }
  std::size_t at = 0;
  sluice::tool::trace_analyzer analyzer(true);
  try {
    sluice::tool::read_trace_events(
        [&](char* into, std::size_t most) {
          const std::size_t n = std::min({most, piece, size - at});
          std::memcpy(into, data + at, n);
          at += n;
          return n;
        },
        analyzer);
    const std::string report = sluice::tool::format_report(analyzer.finish(), "fuzz.json");
    if (report.empty()) __builtin_trap();
  } catch (const std::runtime_error&) {
    // A malformed trace: said, not crashed.
  }
  return 0;
}
