// The process's trace state: every thread's chunk of records, the writer of
// the trace being collected, and what its end needs (clock errors, the trace
// source, the rank). Internal.
#pragma once

#include "trace.hpp"
#include "writer.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace sluice::detail::trace {

//! A thread's chunk of records; full, it goes to the writer.
struct buffer {
  std::mutex m;
  std::vector<record> chunk;
};

//! The trace being collected, and what outlives one trace (the rank).
struct collection {
  std::mutex m;  // buffers, path, writer, at_exit, from_environment, clock_error_ns
  std::vector<std::shared_ptr<buffer>> buffers;
  std::string path;
  std::shared_ptr<writer> w;
  bool at_exit = false;
  bool from_environment = false;
  std::map<int, std::int64_t> clock_error_ns;  // per device, from the backend's calibration
  std::string source;                          // trace::note_source
  // SLUICE_TRACE's value, and whether its file already has the rank in its name.
  std::string env_path;
  bool rank_named = false;
  // The process's rank (note_rank; the launcher's rank until then): kept
  // from one trace to the next, as the process's rank does not change.
  rank_info rank;
  bool has_rank = false;
};

//! The process's collection.
collection& the_collection();

//! Every thread's partly filled chunk (to the writer `w`, or dropped without one).
void drain_buffers(const std::shared_ptr<writer>& w);

}  // namespace sluice::detail::trace
