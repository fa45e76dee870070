// The rules of docs/semantics.md, as data: the conformance runner prints one
// line per rule, and a rule with no test is reported, never hidden.
#pragma once

#include <cstddef>
#include <string_view>

namespace sluice::conformance {

enum class level { must, may };

struct rule {
  std::string_view id;  // "EVT-4"
  level strength;
  std::string_view summary;
};

inline constexpr rule rules[] = {
    {"ORD-1", level::must, "operations on one stream run in order and see earlier effects"},
    {"ORD-2", level::must, "ready() is a snapshot, never true before all work completed"},
    {"ORD-3", level::must, "after synchronize() all prior work is complete and visible"},
    {"ORD-4", level::must,
     "concurrent enqueues from many threads run once each, in per-thread order"},
    {"IND-1", level::must, "streams never synchronize implicitly"},
    {"IND-2", level::may, "independent streams run concurrently"},
    {"IND-3", level::must,
     "wait(stream) orders after work enqueued on the other stream so far, only"},
    {"IND-4", level::must,
     "creating or destroying a stream, event, flag or buffer never waits for other streams"},
    {"EVT-1", level::must, "wait(event) returns at once; later work waits for the captured work"},
    {"EVT-2", level::must, "a wait captures the event state at the time of the call"},
    {"EVT-3", level::must,
     "a never-recorded event: wait is a no-op, ready() true, synchronize() returns"},
    {"EVT-4", level::must, "re-recording replaces the captured work"},
    {"EVT-5", level::must,
     "record on another device's stream throws invalid_argument, enqueues nothing"},
    {"EVT-6", level::must, "ready()/synchronize() work whatever the current device"},
    {"EVT-7", level::must, "destroying an event with a pending record returns at once; waits stay"},
    {"EVT-8", level::must, "elapsed(): argument checks, elapsed(a, a) == 0, never negative"},
    {"EVT-9", level::must, "elapsed time across a gate held T ms is >= T - 1 ms"},
    {"EVT-10", level::may, "blocking_sync events make synchronize() yield the CPU"},
    {"XDEV-1", level::must, "a stream on device B waits on an event of device A"},
    {"XDEV-2", level::must, "every call works whatever the current device and leaves it unchanged"},
    {"XDEV-3", level::must, "device::synchronize() waits for that device only"},
    {"HOST-1", level::must, "host_func runs once, after prior work; later work waits for it"},
    {"HOST-2", level::must, "a blocked host function delays only its own stream"},
    {"HOST-3", level::must, "a host function may call sluice; synchronizing its own stream throws"},
    {"HOST-4", level::must,
     "a host function's exception is reported exactly once; later work runs"},
    {"PRIO-1", level::must, "stream_priority_range reports the vendor range"},
    {"PRIO-2", level::must, "portable levels map monotonically onto vendor values"},
    {"PRIO-3", level::must, "native priorities outside the range are clamped"},
    {"PRIO-4", level::may, "high-priority work overtakes a backlog of low-priority work"},
    {"MEM-1", level::must,
     "copy/fill are stream-ordered; zero bytes no-op; null pointers rejected"},
    {"MEM-2", level::must, "pinned <-> device and pinned <-> pinned copies never block the caller"},
    {"MEM-3", level::must,
     "pageable copies return once the source may be reused / the data arrived"},
    {"MEM-4", level::must, "stream-ordered allocation and free"},
    {"MEM-5", level::must, "wait_value holds until f >= v; write_value stores after prior work"},
    {"MEM-6", level::must,
     "record_stream delays freeing until recorded streams pass the destruction"},
    {"MEM-7", level::must,
     "strided copies move exactly their extent in every direction; checks before enqueue"},
    {"MEM-8", level::must,
     "copies inside registered host memory are asynchronous; bad registrations rejected"},
    {"PEER-1", level::must, "enable_peer_access is idempotent and thread-safe"},
    {"PEER-2", level::must,
     "copy_peer works with and without peer access, reports the path, bit-exact"},
    {"PEER-3", level::must, "copy_peer is ordered only on its own stream"},
    {"PEER-4", level::must, "link() is consistent; link(a, a) is same_device"},
    {"PEER-5", level::must,
     "strided peer copies (single, batch pieces) move exactly their extent, on their stream"},
    {"LIFE-1", level::must,
     "destroying a stream with pending work returns at once; the work completes"},
    {"LIFE-2", level::must,
     "moved-from handles are empty, safe to destroy, throw invalid_handle on use"},
    {"LIFE-3", level::must, "stream_ref cannot be built from 0 or nullptr"},
    {"ERR-1", level::must, "failures throw sluice::error with code, native code, api and message"},
    {"ERR-2", level::must, "an asynchronous device fault surfaces as sticky device_fault"},
    {"ERR-3", level::must, "recoverable errors are not sticky"},
    {"ERR-4", level::must, "bad input is rejected before anything is enqueued"},
    {"NAT-1", level::must, "a borrowed stream and its native stream's own work run in one order"},
    {"NAT-2", level::must,
     "destroying a borrowed stream returns at once; the native stream lives, its work completes"},
    {"NAT-3", level::must, "null and default (implicitly synchronizing) streams are rejected"},
};

inline constexpr std::size_t rule_count = sizeof(rules) / sizeof(rules[0]);

//! "EVT_4__rerecord_replaces" -> "EVT-4"; empty when the name has no rule prefix.
inline std::string_view rule_of_test(std::string_view test_name, char* buffer, std::size_t size) {
  const auto sep = test_name.find("__");
  if (sep == std::string_view::npos || sep >= size) return {};
  for (std::size_t i = 0; i < sep; ++i) buffer[i] = test_name[i] == '_' ? '-' : test_name[i];
  return std::string_view(buffer, sep);
}

}  // namespace sluice::conformance
