// A build with -DSLUICE_TRACING=OFF has no tracing: trace_begin says so with
// errc::not_supported and nothing is collected. Built only in such builds (CI:
// build-notrace).
#include <sluice/sluice.hpp>

#include <gtest/gtest.h>

#include <string>

TEST(TraceCompiledOut, TraceBeginIsNotSupported) {
  try {
    sluice::trace_begin("/tmp/sluice-trace-off.json");
    ADD_FAILURE() << "trace_begin accepted a trace in a build without tracing";
  } catch (const sluice::error& e) {
    EXPECT_EQ(e.code(), sluice::errc::not_supported);
    EXPECT_NE(std::string(e.what()).find("SLUICE_TRACING=OFF"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(sluice::tracing());
  sluice::stream s{sluice::device{0}};
  { sluice::trace_range r(s, "nothing"); }  // no trace: no markers, no error
  s.synchronize();
}
