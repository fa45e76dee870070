// The host backend runs no device code: nothing can fault asynchronously.
#include "fault.hpp"

namespace sluice::conformance {

int enqueue_device_fault(sluice::stream_ref) { return no_device_code; }

}  // namespace sluice::conformance
