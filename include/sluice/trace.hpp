// sluice/trace.hpp: (extension) a timeline of every sluice operation, written
// as Chrome-trace / Perfetto JSON.
//
// Synopsis
//   void trace_begin(const std::string& path);  // start collecting (or SLUICE_TRACE=<path>)
//   std::size_t trace_end();                    // stop; write the file; operations written
//   bool tracing() noexcept;
//   class trace_range {                         // a named range of the user's own work
//     trace_range(stream_ref s, std::string name);  // marks the start on s
//     ~trace_range();                               // marks the end on s
//   };
//
// Each operation (copy, fill, copy_peer, host_func, record, waits, flag
// operations, trace ranges) is timed where it runs (on the device's timeline:
// from the moment it could start to its completion) and where it was enqueued
// (host thread and time). The file has one track per stream per device, host
// tracks per enqueueing thread, flow arrows from the work a wait waited for
// to the wait, and copy sizes and paths as arguments. Off by default; while
// off, each operation pays one relaxed atomic load.
#pragma once

#include <sluice/stream.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace sluice {

//! Starts a trace written to `path` while the program runs (a writer thread;
//! memory bounded whatever the trace's length); trace_end() completes the
//! file, as does process exit when trace_end() was not called. Throws
//! errc::invalid_argument if a trace is already being collected or the path
//! is empty, and errc::not_supported in a build with -DSLUICE_TRACING=OFF.
void trace_begin(const std::string& path);

//! Stops collecting, waits for nothing (operations not yet complete are left
//! out), writes what remains and the tracks' names, closes the file and
//! returns the number of operations in it (trace ranges not counted). Throws
//! errc::invalid_argument if no trace is being collected, and errc::backend_failure
//! if the file cannot be written. Call it after synchronizing the work you
//! want in the trace.
std::size_t trace_end();

//! True while a trace is being collected.
bool tracing() noexcept;

//! A named range on a stream: everything enqueued on `s` between its
//! construction and its destruction. Costs two marker operations on the
//! stream while tracing, nothing otherwise.
class trace_range {
 public:
  trace_range(stream_ref s, std::string name);
  ~trace_range();
  trace_range(const trace_range&) = delete;
  trace_range& operator=(const trace_range&) = delete;

 private:
  stream_ref stream_;
  std::string name_;
  std::uint64_t id_ = 0;  // pairs the range's two markers in the trace
  bool active_ = false;
};

}  // namespace sluice
