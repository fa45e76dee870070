// sluice-bench-trace-report-scale: writes traces of N operations in sluice's
// own format (what src/trace.cpp's to_chrome_json writes: track names, then
// per stream and seq an enqueue instant and the operation, a flow pair per
// wait with a traced source, trace_ranges), runs `sluice trace report` on each
// and prints the wall time and the peak resident memory of the report (wait4's
// ru_maxrss). The runs: docs/results/runs/2026-11-26-trace-report-scale-vm.md.
//   sluice-bench-trace-report-scale --sluice=<sluice> [--ops=1000000,10000000]
//       [--streams=8] [--dir=<dir>] [--png] [--keep] [--max-rss-growth=X]
// --max-rss-growth: exit 1 when the last trace's peak RSS is more than X times
// the first's (the report must stream: ctest tool.trace.scale).
//   sluice-bench-trace-report-scale --write=<file> --ops=N [--streams=8]
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

extern char** environ;

namespace {

//! A buffered writer: one fwrite per megabyte.
class writer {
 public:
  explicit writer(const std::string& path) : f_(std::fopen(path.c_str(), "wb")) {
    if (f_ == nullptr) throw std::runtime_error("cannot write " + path);
    buf_.reserve(1 << 20);
  }
  ~writer() {
    if (f_ != nullptr) std::fclose(f_);
  }
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;
  template <typename... A>
  void put(const char* format, A... args) {
    char line[512];
    const int n = std::snprintf(line, sizeof line, format, args...);
    buf_.append(line, static_cast<std::size_t>(n));
    if (buf_.size() >= (1 << 20)) flush();
  }
  void flush() {
    if (std::fwrite(buf_.data(), 1, buf_.size(), f_) != buf_.size())
      throw std::runtime_error("short write");
    buf_.clear();
  }
  void close() {
    flush();
    // On the disk before the report reads it: its time is not the write-back's.
    if (std::fflush(f_) != 0 || ::fsync(fileno(f_)) != 0 || std::fclose(f_) != 0)
      throw std::runtime_error("cannot close the trace");
    f_ = nullptr;
  }

 private:
  std::FILE* f_;
  std::string buf_;
};

//! A small deterministic generator (the same trace for the same arguments).
struct lcg {
  std::uint64_t s;
  std::uint32_t next() {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::uint32_t>(s >> 33);
  }
};

double us(std::int64_t ns) { return static_cast<double>(ns) / 1000.0; }

//! Writes a trace of `ops` operations on `streams` streams (two devices): each
//! stream's operations back to back with small gaps, every 64th a wait for the
//! previous stream, a trace_range around every 1000 operations.
void write_trace(const std::string& path, std::uint64_t ops, unsigned streams) {
  writer w(path);
  w.put("{\"displayTimeUnit\": \"ns\", \"traceEvents\": [\n");
  const auto device = [](unsigned s) { return static_cast<int>(s % 2); };
  w.put(
      "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 0, \"args\": {\"name\": \"device 0 "
      "(host)\"}},\n");
  w.put(
      "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1, \"args\": {\"name\": \"device 1 "
      "(host)\"}},\n");
  w.put(
      "{\"ph\": \"M\", \"name\": \"process_name\", \"pid\": 1000000, \"args\": {\"name\": \"host "
      "threads (enqueue)\"}}");
  for (unsigned s = 1; s <= streams; ++s)
    w.put(
        ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": %d, \"tid\": %u, \"args\": "
        "{\"name\": \"d%d/s%u worker %u (native priority 0)\", \"stream_name\": \"worker %u\", "
        "\"native_priority\": 0}}",
        device(s), s, device(s), s, s, s);
  for (unsigned s = 1; s <= streams; ++s)
    w.put(
        ",\n{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1000000, \"tid\": %u, \"args\": "
        "{\"name\": \"host thread %u\"}}",
        s, s);
  static const char* const kinds[] = {"copy", "fill", "host_fn", "record", "copy_peer"};
  std::uint64_t flow = 0;
  for (unsigned s = 1; s <= streams; ++s) {
    lcg r{s * 7919ULL};
    const std::uint64_t mine = ops / streams + (s <= ops % streams ? 1 : 0);
    std::int64_t t = 1000 * static_cast<std::int64_t>(s);  // ns
    std::uint64_t seq = 0;
    std::int64_t range_start = -1;
    for (std::uint64_t k = 0; k < mine; ++k) {
      const bool range_begin = k % 1000 == 0, range_end = k % 1000 == 999 || k + 1 == mine;
      if (range_begin) {
        ++seq;
        w.put(
            ",\n{\"name\": \"range_begin\", \"cat\": \"enqueue\", \"ph\": \"i\", \"s\": \"t\", "
            "\"pid\": 1000000, \"tid\": %u, \"ts\": %.3f, \"args\": {\"stream\": %u, "
            "\"device\": %d}}",
            s, us(t > 500 ? t - 500 : 0), s, device(s));
        range_start = t;
      }
      ++seq;
      const bool wait = s > 1 && k % 64 == 63;
      const char* kind = wait ? "wait" : kinds[r.next() % 5];
      const std::int64_t enqueued = t > 800 ? t - 800 : 0;
      const std::int64_t dur = wait ? 300 + r.next() % 700 : 500 + r.next() % 9500;
      w.put(
          ",\n{\"name\": \"%s\", \"cat\": \"enqueue\", \"ph\": \"i\", \"s\": \"t\", \"pid\": "
          "1000000, \"tid\": %u, \"ts\": %.3f, \"args\": {\"stream\": %u, \"device\": %d}}",
          kind, s, us(enqueued), s, device(s));
      if (wait) {
        // For the stream before: its operation of about this position.
        const std::uint64_t from_seq = seq > 2 ? seq - 2 : 1;
        w.put(
            ",\n{\"name\": \"wait\", \"cat\": \"op\", \"ph\": \"X\", \"pid\": %d, \"tid\": %u, "
            "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"seq\": %" PRIu64
            ", \"enqueued_us\": %.3f, \"host_thread\": %u, \"waits_for_stream\": %u, "
            "\"waits_for_seq\": %" PRIu64 "}}",
            device(s), s, us(t), us(dur), seq, us(enqueued), s, s - 1, from_seq);
        ++flow;
        w.put(",\n{\"name\": \"wait\", \"cat\": \"wait\", \"ph\": \"s\", \"id\": %" PRIu64
              ", \"pid\": %d, \"tid\": %u, \"ts\": %.3f}",
              flow, device(s - 1), s - 1, us(t));
        w.put(
            ",\n{\"name\": \"wait\", \"cat\": \"wait\", \"ph\": \"f\", \"bp\": \"e\", \"id\": "
            "%" PRIu64 ", \"pid\": %d, \"tid\": %u, \"ts\": %.3f}",
            flow, device(s), s, us(t));
      } else {
        w.put(
            ",\n{\"name\": \"%s\", \"cat\": \"op\", \"ph\": \"X\", \"pid\": %d, \"tid\": %u, "
            "\"ts\": %.3f, \"dur\": %.3f, \"args\": {\"seq\": %" PRIu64
            ", \"enqueued_us\": %.3f, \"host_thread\": %u, \"bytes\": %u}}",
            kind, device(s), s, us(t), us(dur), seq, us(enqueued), s, 4096U * (1 + r.next() % 256));
      }
      t += dur + (r.next() % 4 == 0 ? 200 + r.next() % 2000 : 0);
      if (range_end) {
        ++seq;
        w.put(
            ",\n{\"name\": \"range_end\", \"cat\": \"enqueue\", \"ph\": \"i\", \"s\": \"t\", "
            "\"pid\": 1000000, \"tid\": %u, \"ts\": %.3f, \"args\": {\"stream\": %u, "
            "\"device\": %d}}",
            s, us(t), s, device(s));
        w.put(
            ",\n{\"name\": \"chunk\", \"cat\": \"range\", \"ph\": \"X\", \"pid\": %d, \"tid\": "
            "%u, \"ts\": %.3f, \"dur\": %.3f}",
            device(s), s, us(range_start), us(t - range_start));
      }
    }
  }
  w.put("\n]}\n");
  w.close();
}

struct run_result {
  int status = 0;
  double seconds = 0;
  long max_rss_kib = 0;
};

//! Runs the command, its output to `log`; wall time and peak RSS from wait4.
run_result run(const std::vector<std::string>& command, const std::string& log) {
  std::vector<char*> argv;
  argv.reserve(command.size() + 1);
  for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  const auto start = std::chrono::steady_clock::now();
  pid_t pid = 0;
  if (posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ) != 0)
    throw std::runtime_error("cannot run " + command[0]);
  posix_spawn_file_actions_destroy(&actions);
  run_result r;
  struct rusage usage {};
  if (wait4(pid, &r.status, 0, &usage) != pid) throw std::runtime_error("wait4 failed");
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.max_rss_kib = usage.ru_maxrss;  // Linux: KiB
  return r;
}

std::vector<std::uint64_t> numbers(const std::string& list) {
  std::vector<std::uint64_t> out;
  std::size_t at = 0;
  while (at < list.size()) {
    std::size_t end = list.find(',', at);
    if (end == std::string::npos) end = list.size();
    out.push_back(std::stoull(list.substr(at, end - at)));
    at = end + 1;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::string sluice, dir = ".", write;
  std::vector<std::uint64_t> sizes = {1000000, 10000000};
  unsigned streams = 8;
  bool png = false, keep = false;
  double max_growth = 0;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      const auto value = [&](const char* name) {
        const std::string prefix = std::string(name) + "=";
        return a.rfind(prefix, 0) == 0 ? a.substr(prefix.size()) : std::string();
      };
      if (!value("--sluice").empty()) {
        sluice = value("--sluice");
      } else if (!value("--ops").empty()) {
        sizes = numbers(value("--ops"));
      } else if (!value("--streams").empty()) {
        streams = static_cast<unsigned>(std::stoul(value("--streams")));
      } else if (!value("--dir").empty()) {
        dir = value("--dir");
      } else if (!value("--write").empty()) {
        write = value("--write");
      } else if (!value("--max-rss-growth").empty()) {
        max_growth = std::stod(value("--max-rss-growth"));
      } else if (a == "--png") {
        png = true;
      } else if (a == "--keep") {
        keep = true;
      } else {
        std::fprintf(stderr, "unknown argument %s\n", a.c_str());
        return 2;
      }
    }
    if (streams < 2 || sizes.empty()) throw std::invalid_argument("--streams >= 2, --ops=N[,N...]");
    if (!write.empty()) {
      write_trace(write, sizes.front(), streams);
      return 0;
    }
    if (sluice.empty()) throw std::invalid_argument("--sluice=<the sluice program> is needed");
    std::printf("sluice trace report at scale: %u streams\n", streams);
    std::printf("%12s %10s %10s %14s %s\n", "operations", "file MB", "wall s", "peak RSS MB",
                png ? "(with --png)" : "");
    long first_rss = 0, last_rss = 0;
    for (const std::uint64_t n : sizes) {
      const std::string trace = dir + "/scale-" + std::to_string(n) + ".trace.json";
      write_trace(trace, n, streams);
      struct stat st {};
      stat(trace.c_str(), &st);
      std::vector<std::string> command = {sluice, "trace", "report", trace};
      if (png) {
        command.push_back("--png");
        command.push_back(dir + "/scale-" + std::to_string(n) + ".png");
      }
      const std::string log = dir + "/scale-" + std::to_string(n) + ".report.txt";
      const run_result r = run(command, log);
      if (!keep) std::remove(trace.c_str());
      std::printf("%12" PRIu64 " %10.1f %10.2f %14.1f\n", n, static_cast<double>(st.st_size) / 1e6,
                  r.seconds, static_cast<double>(r.max_rss_kib) / 1024.0);
      if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0) {
        std::fprintf(stderr, "sluice trace report failed on %s (status %d): see %s\n",
                     trace.c_str(), r.status, log.c_str());
        return 1;
      }
      if (first_rss == 0) first_rss = r.max_rss_kib;
      last_rss = r.max_rss_kib;
    }
    if (max_growth > 0 && sizes.size() > 1) {
      const double growth = static_cast<double>(last_rss) / static_cast<double>(first_rss);
      std::printf("peak RSS: %.2fx from %" PRIu64 " to %" PRIu64 " operations (at most %.2fx)\n",
                  growth, sizes.front(), sizes.back(), max_growth);
      if (growth > max_growth) {
        std::fprintf(stderr, "sluice trace report does not stream: its memory grew %.2fx\n",
                     growth);
        return 1;
      }
    }
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "sluice-bench-trace-report-scale: %s\n", e.what());
    return 2;
  }
}
