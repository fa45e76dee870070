// main() of sluice-conformance-graph-<backend>: the GRAPH family of the
// conformance suite (docs/semantics.md GRAPH-1..16), one verdict per rule as
// the other families that run as their own program report them. Built for
// every backend; a GPU backend's run without its GPU exits 77 (skipped).
#include "../conformance/watchdog.hpp"
#include "../family_report.hpp"

#include <sluice/backend.hpp>
#include <sluice/device.hpp>

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

namespace {

const std::vector<sluice::conformance::family_rule> rules = {
    {"GRAPH-1", "GRAPH_1__",
     "recorded operations do not run at capture; each launch runs each once"},
    {"GRAPH-2", "GRAPH_2__", "a launch runs after earlier work; later work waits for every branch"},
    {"GRAPH-3", "GRAPH_3__", "launches of one graph_exec never overlap, even on different streams"},
    {"GRAPH-4", "GRAPH_4__",
     "a joined stream depends on the recorded point; not joined back: end() throws"},
    {"GRAPH-5", "GRAPH_5__", "calls rejected during capture throw and leave the capture valid"},
    {"GRAPH-6", "GRAPH_6__", "host functions in a graph: HOST-1..4 per launch"},
    {"GRAPH-7", "GRAPH_7__", "events recorded in a capture are recorded again by every launch"},
    {"GRAPH-8", "GRAPH_8__", "write_value/wait_value in a graph act on every launch"},
    {"GRAPH-9", "GRAPH_9__",
     "update() with the same shape takes the new arguments; else changes nothing"},
    {"GRAPH-10", "GRAPH_10__", "a peer copy in a graph moves the right bytes by its reported path"},
    {"GRAPH-11", "GRAPH_11__", "other streams, threads and allocations work during a capture"},
    {"GRAPH-12", "GRAPH_12__", "a capture destroyed without end() discards the recording"},
    {"GRAPH-13", "GRAPH_13__", "the first capture on a fresh device and stream succeeds"},
    {"GRAPH-14", "GRAPH_14__", "to_dot(): the contract's vertices, transitively reduced edges"},
    {"GRAPH-15", "GRAPH_15__", "(MAY) independent branches run concurrently"},
    {"GRAPH-16", "GRAPH_16__",
     "(MAY) a launch costs the enqueuing thread less than its operations"},
};

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  ::testing::InitGoogleTest(&argc, argv);
  const char* markdown = sluice::conformance::markdown_argument(argc, argv);
  if (sluice::backend() != sluice::backend_kind::host && sluice::device_count() == 0) {
    std::printf("sluice-conformance-graph-%s: no %s device: every GRAPH test needs one; none ran\n",
                sluice::backend_name(),
                sluice::backend() == sluice::backend_kind::cuda ? "CUDA" : "HIP");
    return 77;
  }
  sluice::conformance::install_watchdog();  // a hanging test is named, then exit 124
  int result = RUN_ALL_TESTS();
  if (::testing::UnitTest::GetInstance()->test_to_run_count() == 0) {
    std::fprintf(stderr, "sluice-conformance-graph: no test ran\n");
    return 1;
  }
  // With a filter (the mutation runs) only gtest's result counts.
  if (::testing::GTEST_FLAG(filter) == "*" &&
      sluice::conformance::report_family(
          std::string("sluice-conformance-graph-") + sluice::backend_name(), rules, markdown) != 0)
    result = 1;
  return result;
}
