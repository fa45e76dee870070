// The process's host-function path (chosen_path.hpp).
#include "host_func/chosen_path.hpp"

#include "diagnose.hpp"
#include "engine.hpp"
#include "vendor.hpp"

#include <sluice/detail/interop.hpp>

#include <iterator>

namespace sluice::detail {

const host_path::choice& chosen_host_path() {
  static const host_path::choice chosen = [] {
    (void)engine();
    host_path::choice c = host_path::decide(host_path::this_process(
        api::default_host_path,
        {std::begin(api::launch_blocking_variables), std::end(api::launch_blocking_variables)}));
    diagnose::note_host_function_path(c.name, c.evidence);
    return c;
  }();
  return chosen;
}

bool kernel_launches_serialized() { return chosen_host_path().launches_serialized; }

host_function_path_choice host_function_path() {
  const host_path::choice& c = chosen_host_path();
  return {c.name, c.evidence};
}

}  // namespace sluice::detail
