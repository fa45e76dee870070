// Streams in `sluice trace report`: their ids in merged traces (several
// ranks' files) and how the report and the timeline name them.
#pragma once

#include <cstdint>
#include <string>

namespace sluice::tool {

//! Merged traces (several ranks' files): a stream's id carries its file's
//! rank + 1 in bits 48..63, so that streams of different ranks stay apart;
//! stream_label shows it as "r<rank>/".
constexpr int rank_shift = 48;
inline std::uint64_t merged_stream(int rank, std::uint64_t stream) {
  return stream | (static_cast<std::uint64_t>(rank + 1) << rank_shift);
}
//! The rank of a (merged) stream id; -1: a single trace's stream.
inline int rank_of_stream(std::uint64_t stream) {
  return static_cast<int>(stream >> rank_shift) - 1;
}

//! How the report and the timeline name a stream: "d<device>/s<id>", then its
//! name when it has one ("d0/s3 upload").
std::string stream_label(int device, std::uint64_t stream, const std::string& name);

}  // namespace sluice::tool
