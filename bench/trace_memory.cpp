// sluice-bench-trace-memory: what a long traced run costs in memory, and how
// fast the trace writer formats records, on the host backend (one run).
//
// Enqueues 64-byte fills round-robin on a few streams of device 0, in batches
// followed by a synchronize, with a trace being collected. At each checkpoint
// (operations traced so far) it prints the process's resident memory
// (/proc/self/status: VmRSS, and VmHWM, the high-water mark). Then it ends the
// trace and prints how long trace_end took, the file's size, and the CPU time
// of the tracer's writer thread ("sluice-trace", when there is one): the
// writer's throughput is records over the writer's busy time (before the
// streaming writer, trace_end formatted everything on the calling thread).
//
//   sluice-bench-trace-memory [--ops=N[,N...]] [--streams=S] [--batch=B] [--trace=<file>]
//
// Defaults: --ops=1000000,20000000 --streams=4 --batch=4096, the trace in /tmp
// (removed at the end unless --trace is given).
#include <sluice/sluice.hpp>

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;

//! A field of /proc/self/status in kB ("VmRSS", "VmHWM"), or -1.
long status_kb(const char* field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  const std::size_t n = std::strlen(field);
  while (std::getline(in, line))
    if (line.compare(0, n, field) == 0 && line.size() > n && line[n] == ':')
      return std::atol(line.c_str() + n + 1);
  return -1;
}

//! CPU seconds (user + system) of this process's thread named `name`, or -1.
double thread_cpu_seconds(const char* name) {
  DIR* tasks = ::opendir("/proc/self/task");
  if (tasks == nullptr) return -1;
  double seconds = -1;
  while (const dirent* t = ::readdir(tasks)) {
    if (t->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + t->d_name;
    std::ifstream comm(dir + "/comm");
    std::string thread_name;
    std::getline(comm, thread_name);
    if (thread_name != name) continue;
    std::ifstream stat(dir + "/stat");
    std::string all((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto close = all.rfind(')');  // fields after the command name, which may hold spaces
    if (close == std::string::npos) break;
    std::istringstream fields(all.substr(close + 2));
    std::string skip;
    for (int i = 3; i < 14; ++i) fields >> skip;  // state .. cmajflt (fields 3..13)
    long utime = 0, stime = 0;
    fields >> utime >> stime;
    seconds = static_cast<double>(utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
  }
  ::closedir(tasks);
  return seconds;
}

struct options {
  std::vector<long long> checkpoints{1000000, 20000000};
  int streams = 4;
  int batch = 4096;
  std::string trace;
};

options parse(int argc, char** argv) {
  options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--ops=", 0) == 0) {
      o.checkpoints.clear();
      std::istringstream list(a.substr(6));
      std::string item;
      while (std::getline(list, item, ',')) o.checkpoints.push_back(std::atoll(item.c_str()));
      std::sort(o.checkpoints.begin(), o.checkpoints.end());
    } else if (a.rfind("--streams=", 0) == 0) {
      o.streams = std::max(1, std::atoi(a.c_str() + 10));
    } else if (a.rfind("--batch=", 0) == 0) {
      o.batch = std::max(1, std::atoi(a.c_str() + 8));
    } else if (a.rfind("--trace=", 0) == 0) {
      o.trace = a.substr(8);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--ops=N[,N...]] [--streams=S] [--batch=B] [--trace=<file>]\n",
                   argv[0]);
      std::exit(2);
    }
  }
  if (o.checkpoints.empty() || o.checkpoints.front() <= 0) {
    std::fprintf(stderr, "--ops: a list of positive counts\n");
    std::exit(2);
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const options o = parse(argc, argv);
  if (sluice::tracing()) {
    std::fprintf(stderr, "unset SLUICE_TRACE: this bench starts its own trace\n");
    return 2;
  }
  const bool keep = !o.trace.empty();
  const std::string path =
      keep ? o.trace : "/tmp/sluice-trace-memory-" + std::to_string(::getpid()) + ".json";
  const sluice::device dev{0};
  std::vector<sluice::stream> streams;
  for (int i = 0; i < o.streams; ++i) streams.emplace_back(dev);
  sluice::device_buffer<unsigned char> data{dev, 64};

  std::printf("sluice-bench-trace-memory: host backend, %d streams, batches of %d fills\n",
              o.streams, o.batch);
  std::printf("before the trace: VmRSS %ld kB, VmHWM %ld kB\n", status_kb("VmRSS"),
              status_kb("VmHWM"));
  sluice::trace_begin(path);
  const auto t0 = clock_type::now();
  long long done = 0;
  for (const long long checkpoint : o.checkpoints) {
    while (done < checkpoint) {
      const long long n = std::min<long long>(o.batch, checkpoint - done);
      for (long long i = 0; i < n; ++i)
        sluice::fill(streams[static_cast<std::size_t>(i % o.streams)], data.data(), 1, 64);
      for (auto& s : streams) s.synchronize();
      done += n;
    }
    const double seconds = std::chrono::duration<double>(clock_type::now() - t0).count();
    std::printf("after %lld traced operations (%.1f s): VmRSS %ld kB, VmHWM %ld kB\n", done,
                seconds, status_kb("VmRSS"), status_kb("VmHWM"));
    std::fflush(stdout);
  }
  const double writer_before_end = thread_cpu_seconds("sluice-trace");
  const auto e0 = clock_type::now();
  const std::size_t written = sluice::trace_end();
  const double end_seconds = std::chrono::duration<double>(clock_type::now() - e0).count();
  std::printf("trace_end: %.3f s, %zu operations written; VmHWM %ld kB\n", end_seconds, written,
              status_kb("VmHWM"));
  if (writer_before_end >= 0)
    std::printf("writer thread busy %.2f s CPU before trace_end: %.2f M records/s\n",
                writer_before_end, static_cast<double>(written) / writer_before_end / 1e6);
  else
    std::printf("no writer thread: trace_end wrote %.2f M records/s\n",
                static_cast<double>(written) / end_seconds / 1e6);
  std::ifstream file(path, std::ios::binary | std::ios::ate);
  std::printf("trace file: %.1f MB\n", static_cast<double>(file.tellg()) / 1e6);
  if (!keep) std::remove(path.c_str());
  return written == static_cast<std::size_t>(done) ? 0 : 1;
}
