// Where a process stands among the ranks of an MPI job, and the name of its
// trace file: the launcher's rank, the file of a rank, the host's identity,
// the rank a communicator gives the process.
#include "collection.hpp"
#include "settings.hpp"

#include <unistd.h>

#include <charconv>
#include <cstdio>
#include <fstream>
#include <string>

namespace sluice::detail::trace {

int launcher_rank() noexcept {
  // Open MPI, PMIx launchers, MPICH's Hydra (and Intel MPI), MVAPICH.
  for (const setting s : {setting::ompi_comm_world_rank, setting::pmix_rank, setting::pmi_rank,
                          setting::mv2_comm_world_rank}) {
    const char* v = settings::value(s);
    if (v == nullptr || *v == '\0') continue;
    int rank = -1;
    const char* end = v + std::char_traits<char>::length(v);
    const auto r = std::from_chars(v, end, rank);
    if (r.ec == std::errc() && r.ptr == end && rank >= 0) return rank;
  }
  return -1;
}

std::string rank_path(const std::string& path, int rank) {
  const std::string r = std::to_string(rank);
  if (path.find("%r") != std::string::npos) {
    std::string out;
    for (std::size_t i = 0; i < path.size(); ++i) {
      if (path[i] == '%' && i + 1 < path.size() && path[i + 1] == 'r') {
        out += r;
        ++i;
      } else {
        out += path[i];
      }
    }
    return out;
  }
  const std::size_t slash = path.rfind('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t dot = path.rfind('.');
  // An extension: a dot in the last name, not its first character ("dir/.trace" has none).
  if (dot == std::string::npos || dot <= name) return path + ".rank" + r;
  return path.substr(0, dot) + ".rank" + r + path.substr(dot);
}

std::string host_identity() {
  char host[256] = {};
  if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
  std::string boot;
  std::ifstream in("/proc/sys/kernel/random/boot_id");
  std::getline(in, boot);
  return std::string(host) + (boot.empty() ? "" : " " + boot);
}

void note_rank(const rank_info& r) noexcept {
  auto& c = the_collection();
  try {
    std::lock_guard<std::mutex> lock(c.m);
    // The first; a later one only where measured against more ranks.
    if (!c.has_rank || c.rank.reference < 0 || (r.reference >= 0 && r.ranks > c.rank.ranks)) {
      c.rank = r;
      c.has_rank = true;
    }
    if (c.from_environment && !c.rank_named && c.w != nullptr && r.rank >= 0) {
      c.w->rename_at_end(rank_path(c.env_path, r.rank));
      c.rank_named = true;
    }
  } catch (...) {
    std::fprintf(stderr, "sluice: out of memory while tracing: the rank is left out\n");
  }
}

}  // namespace sluice::detail::trace
