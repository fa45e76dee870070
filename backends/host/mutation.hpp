// Test-only mutations of the host backend (SLUICE_HOST_MUTATION=<name>): each
// breaks one guarantee on purpose, so that CI can show that the conformance
// suite catches it (docs/conformance/mutations.md). Never set in production;
// when unset each switch point costs one relaxed load.
#pragma once

#include <atomic>

namespace sluice::detail::mutation {

enum class kind : int {
  none,
  ignore_event_waits,        //!< wait(event) / wait(stream) enqueue nothing (EVT-1, IND-3)
  complete_records_at_once,  //!< a record counts as complete when it is made (EVT-4, EVT-7)
  run_host_functions_early,  //!< host functions run at once on their own thread (HOST-1, ORD-1)
  lose_host_function_exceptions,  //!< exceptions of host functions are dropped (HOST-4)
  invert_priorities,              //!< low-priority streams are dispatched first (PRIO-4, unit test)
  borrow_own_queue,               //!< a borrowed stream gets a queue of its own (NAT-1)
  borrow_destroys_native,         //!< destroying a borrowed stream destroys its native (NAT-2)
  borrow_accepts_any,             //!< borrow() accepts the null stream (NAT-3)
};

//! Reads SLUICE_HOST_MUTATION once; errc::invalid_argument for an unknown name.
void configure();

extern std::atomic<int> active;

inline bool is(kind k) noexcept {
  return active.load(std::memory_order_relaxed) == static_cast<int>(k);
}

}  // namespace sluice::detail::mutation
