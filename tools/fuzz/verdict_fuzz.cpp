// libFuzzer target: the verdict-file reader of `sluice conformance matrix`
// (read_verdicts) and the table it feeds, on arbitrary bytes. Built with
// -DSLUICE_FUZZ=ON (clang only); run by scripts/fuzz, seeded with verdict files
// of the host backend written at run time and tools/tests/verdicts. A malformed
// file must throw std::runtime_error; anything else (a crash, a leak, a
// sanitizer report, another exception) is a finding.
#include "conformance/matrix.hpp"

#include <cstddef>
#include <cstdint>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto file = sluice::tool::read_verdicts(text, "fuzz");
    // Both forms of the table, the file against itself and alone.
    std::ostringstream out;
    sluice::tool::print_matrix(out, {file}, false);
    sluice::tool::print_matrix(out, {file, file}, true);
  } catch (const std::runtime_error&) {
    // A malformed file: what the reader must do.
  }
  return 0;
}
