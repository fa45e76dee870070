// The path this process's host functions take on the GPU backend, and why:
// host_path::decide (host_path.hpp), called here once and nowhere else. The
// enqueue of each batch (enqueue.cpp) takes its path from this choice; the
// device set-up (engine.cpp) and sluice::detail::host_function_path() read it
// too. Defined in chosen_path.cpp.
#pragma once

#include "host_func/host_path.hpp"

namespace sluice::detail {

//! The choice, made at the first call, after the vendor's runtime has
//! started (a tool's library may come with it).
const host_path::choice& chosen_host_path();

//! A tool or switch that serializes kernel launches is present (decided with
//! the host functions' path): every launch then waits for its kernel, so the
//! backend launches none of its kernels on streams that may be held.
bool kernel_launches_serialized();

}  // namespace sluice::detail
