// Several ranks' traces (SLUICE_TRACE under an MPI launcher) on one
// timeline: each file's times moved onto the reference rank's clock, its
// streams marked with its rank.
#pragma once

#include "trace/events.hpp"

#include <string>
#include <vector>

namespace sluice::tool {

class trace_analyzer;

//! How the report puts several ranks' traces on one timeline: per file, the
//! microseconds added to its times, and how far it may be off against the
//! reference rank's file.
struct rank_alignment {
  int rank = 0;
  std::string file;  // read_rank_files fills it
  double shift_us = 0;
  double error_us = 0;  // +-
  std::string how;      // "reference", "same host", "clock offset", "not aligned: ..."
};
//! Aligns traces with their metadata (in file order). A file without a rank
//! gets its position; throws std::runtime_error for two files of one rank.
//! The reference: the file of the rank the offsets were measured against,
//! else the first. Its origin - offset is each file's place on the reference
//! clock; the earliest becomes 0.
std::vector<rank_alignment> align_ranks(const std::vector<trace_metadata>& files);

//! Reads the files of several ranks into one analysis: each file is read
//! twice (its metadata is at its end: first for the alignment, then its
//! events, shifted onto the common timeline, streams prefixed by rank).
//! Throws std::runtime_error naming the file.
void read_rank_files(const std::vector<std::string>& files, trace_analyzer& into,
                     std::vector<rank_alignment>* alignment);

//! The metadata of one trace file (its "sluice_trace" event).
trace_metadata read_trace_metadata(const std::string& path);

}  // namespace sluice::tool
