// SLUICE_TRACE=<path>: a trace from the backend's start to the process's
// exit, one file per rank.
#include "collection.hpp"
#include "settings.hpp"

#include <sluice/trace.hpp>

#include <unistd.h>

#include <cstdio>
#include <mutex>
#include <string>

namespace sluice::detail::trace {

void start_from_environment() {
  const std::string path = settings::trace_path();
  if (path.empty() || enabled()) return;
#ifdef SLUICE_NO_TRACING
  std::fprintf(stderr,
               "sluice: SLUICE_TRACE=%s is ignored: this sluice was built with "
               "-DSLUICE_TRACING=OFF\n",
               path.c_str());
  return;
#endif
  // One file per rank (docs/api.md "Tracing"): never two processes on one file.
  // Under a launcher the rank is known now; otherwise the file has a name of
  // this process's own (host and pid) until it is written, then the rank's
  // name (a communicator gave the process one) or `path`.
  const int rank = launcher_rank();
  std::string file = path;
  if (rank >= 0) {
    file = rank_path(path, rank);
  } else {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) host[0] = '\0';
    file += std::string(".") + host + "." + std::to_string(getpid()) + ".part";
  }
  trace_begin(file);
  auto& c = the_collection();
  std::lock_guard<std::mutex> lock(c.m);
  c.from_environment = true;
  c.env_path = path;
  c.rank_named = rank >= 0;
  if (rank >= 0 && !c.has_rank) {
    c.rank.rank = rank;
    c.has_rank = true;
  }
  if (rank < 0) {
    if (c.has_rank && c.rank.rank >= 0) {
      c.w->rename_at_end(rank_path(path, c.rank.rank));
      c.rank_named = true;
    } else {
      c.w->rename_at_end(path);
    }
  }
}

}  // namespace sluice::detail::trace
