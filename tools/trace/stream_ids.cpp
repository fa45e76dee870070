#include "trace/stream_ids.hpp"

namespace sluice::tool {

std::string stream_label(int device, std::uint64_t stream, const std::string& name) {
  const int rank = rank_of_stream(stream);
  const std::uint64_t id = stream & ((std::uint64_t{1} << rank_shift) - 1);
  return (rank >= 0 ? "r" + std::to_string(rank) + "/" : std::string()) + "d" +
         std::to_string(device) + "/s" + std::to_string(id) + (name.empty() ? "" : " " + name);
}

}  // namespace sluice::tool
