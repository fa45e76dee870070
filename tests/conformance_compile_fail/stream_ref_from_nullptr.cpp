// LIFE-3: must NOT compile. `nullptr` must not become a stream by accident.
// Built by the ctest conformance.compile_fail.stream_ref_from_nullptr, which
// passes only when the compiler rejects this file with a "deleted" diagnostic.
#include <sluice/stream.hpp>

void take(sluice::stream_ref) {}

void from_nullptr() { take(nullptr); }
