// The activity source of a GPU backend without one (sluice::hip; sluice::cuda
// built where the toolkit has no cupti.h): traces use timing events.
#include "trace/activity_tracer.hpp"

namespace sluice::detail {

activity_source* vendor_activity_source(std::string* why) {
  *why = "this build has no activity source (CUPTI is CUDA's, and needs cupti.h at build time)";
  return nullptr;
}

}  // namespace sluice::detail
