// Work deferred until streams have passed the present moment: frees of memory
// and flags that streams may still use (memory.cpp, flag.cpp). Defined in
// when_streams_pass.cpp.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace sluice::detail {

struct stream_state;

//! On a sluice thread: marks the end of each stream that is not idle (a pooled
//! event, recorded under the stream's enqueue lock), waits on the host until
//! every stream has passed its mark, then calls then(""); then(failure) when a
//! mark could not be made or a wait failed (a device fault), with the first
//! failure in words (vendor call, device, vendor error). Idle streams get
//! no mark. Never holds a device queue. At process exit (runtime unloading)
//! `then` is not called. The caller keeps its references to the streams only
//! for the duration of this call (this takes its own).
void when_streams_pass(const std::vector<stream_state*>& streams,
                       std::function<void(const std::string& failure)> then) noexcept;

}  // namespace sluice::detail
