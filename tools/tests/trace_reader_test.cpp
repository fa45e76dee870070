// `sluice trace report`'s reader on malformed input (tools/tests/corpus and
// ctest tool.trace.corpus hold many more cases, read by the command).
#include "trace/reader.hpp"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace {

using sluice::tool::read_trace;

TEST(TraceReport, MalformedInputIsRejectedWithAPosition) {
  try {
    (void)read_trace(R"json({"traceEvents": [{"ph": "X", )json", nullptr);
    FAIL() << "accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("byte "), std::string::npos) << e.what();
  }
  EXPECT_THROW((void)read_trace(R"json({"events": []})json", nullptr), std::runtime_error);
}

}  // namespace
