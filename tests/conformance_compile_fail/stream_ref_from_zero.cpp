// LIFE-3: must NOT compile. `0` must not become a stream by accident.
// Built by the ctest conformance.compile_fail.stream_ref_from_zero, which
// passes only when the compiler rejects this file with a "deleted" diagnostic.
#include <sluice/stream.hpp>

void from_zero() {
  sluice::stream_ref r = 0;
  (void)r;
}
