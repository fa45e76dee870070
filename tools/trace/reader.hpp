// `sluice trace report`'s reader: a trace's events, from its bytes to a
// trace_sink, with bounded memory.
#pragma once

#include "trace/events.hpp"

#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace sluice::tool {

//! Reads a sluice trace (Chrome-trace JSON: an object with a traceEvents
//! array, or the array alone) from `source` with bounded memory: simdjson
//! parses each event; the array around them is followed by a small framing
//! scanner (docs/design.md, "Libraries"). Throws std::runtime_error naming the
//! byte, the event and what is wrong on malformed JSON, nesting deeper than
//! 64 levels, an event of more than 64 MiB, fields of the wrong type, numbers
//! out of range, negative durations and a truncated file.
void read_trace_events(const trace_source& source, trace_sink& sink);

//! read_trace_events on a trace held in memory, handed over in pieces of at
//! most `piece` bytes (a reader meets an event split across two reads).
void read_trace_string(const std::string& json, trace_sink& sink,
                       std::size_t piece = static_cast<std::size_t>(-1));

//! read_trace_events on a file; throws std::runtime_error (without the file's
//! name: the caller adds it) when it cannot be read or is malformed.
void read_trace_file(const std::string& path, trace_sink& sink);

//! Reads the operations of a sluice trace held in memory and, for those
//! given, the streams' tracks (names), the devices' clock errors and the
//! trace_ranges. Throws as read_trace_events.
std::vector<traced_op> read_trace(const std::string& json, stream_tracks* tracks,
                                  std::map<int, double>* clock_errors = nullptr,
                                  std::vector<traced_range>* ranges = nullptr);

}  // namespace sluice::tool
