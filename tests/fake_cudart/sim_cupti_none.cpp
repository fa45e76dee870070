// The simulated runtime without a CUPTI (the toolkit has no cupti.h): nothing
// is recorded (sim_cupti.hpp).
#include "sim_cupti.hpp"

namespace sim_cupti {
std::uint32_t api_call(int) noexcept { return 0; }
std::uint64_t now() noexcept { return 0; }
void ran(activity, std::uint32_t, std::uint32_t, int, std::uint64_t, std::uint64_t, std::uint64_t,
         const char*) noexcept {}
}  // namespace sim_cupti
