// Test-only mutations of the host backend: see mutation.hpp.
#include "mutation.hpp"

#include "checks.hpp"

#include <cstdlib>
#include <cstring>

namespace sluice::detail::mutation {

std::atomic<int> active{0};

void configure() {
  const char* value = std::getenv("SLUICE_HOST_MUTATION");
  if (value == nullptr || *value == '\0') return;
  static constexpr struct {
    const char* name;
    kind k;
  } names[] = {{"ignore_event_waits", kind::ignore_event_waits},
               {"complete_records_at_once", kind::complete_records_at_once},
               {"run_host_functions_early", kind::run_host_functions_early},
               {"lose_host_function_exceptions", kind::lose_host_function_exceptions},
               {"invert_priorities", kind::invert_priorities},
               {"borrow_own_queue", kind::borrow_own_queue},
               {"borrow_destroys_native", kind::borrow_destroys_native},
               {"borrow_accepts_any", kind::borrow_accepts_any}};
  for (const auto& n : names)
    if (std::strcmp(value, n.name) == 0) {
      active.store(static_cast<int>(n.k), std::memory_order_relaxed);
      return;
    }
  fail(errc::invalid_argument, "sluice host backend", "SLUICE_HOST_MUTATION='", value,
       "' names no mutation (test-only: ignore_event_waits, complete_records_at_once, "
       "run_host_functions_early, lose_host_function_exceptions, invert_priorities, "
       "borrow_own_queue, borrow_destroys_native, borrow_accepts_any)");
}

}  // namespace sluice::detail::mutation
