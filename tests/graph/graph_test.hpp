// Helpers of the GRAPH family (tests/graph): the conformance suite's own
// helpers (gates, eventually/stays_false, latches) and a few for graphs.
#pragma once

#include "../conformance/support.hpp"

#include <sluice/graph.hpp>

#include <cstring>
#include <functional>

namespace sluice::conformance {

//! Whether f throws sluice::error with errc::capture_violation.
inline ::testing::AssertionResult violates(const std::function<void()>& f) {
  try {
    f();
  } catch (const sluice::error& e) {
    if (e.code() == errc::capture_violation) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "threw " << to_string(e.code()) << ": " << e.what();
  }
  return ::testing::AssertionFailure() << "did not throw";
}

//! The number of bytes of p[0, n) that differ from v.
inline std::size_t count_not(const byte* p, std::size_t n, byte v) {
  std::size_t k = 0;
  for (std::size_t i = 0; i < n; ++i) k += p[i] != v ? 1 : 0;
  return k;
}

}  // namespace sluice::conformance
