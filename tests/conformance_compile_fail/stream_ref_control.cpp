// The control for the LIFE-3 compile-fail checks: the same headers, flags and
// command, with a valid use. It must compile, so that a failure of the other
// checks means "rejected", not "the check itself is broken".
#include <sluice/stream.hpp>

void take(sluice::stream_ref) {}

void from_stream(const sluice::stream& s) {
  sluice::stream_ref r = s;
  take(r);
}
