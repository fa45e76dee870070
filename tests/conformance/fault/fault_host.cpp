// The host backend runs no device code: nothing can fault asynchronously.
#include "fault.hpp"

namespace sluice::conformance {

bool enqueue_device_fault(sluice::stream_ref) { return false; }

}  // namespace sluice::conformance
