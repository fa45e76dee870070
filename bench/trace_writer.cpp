// sluice-bench-trace-writer: the trace writer's formatting, records per
// second, with the hand-written writer the tracer uses (src/trace.cpp,
// append_record_events) against the same events built and written with
// nlohmann-json (one json object per event, dump()), in the same run. No file:
// the text goes to a buffer emptied every MiB (the writer's flush size).
//
//   sluice-bench-trace-writer [--records=N] [--rounds=R]
//
// docs/design.md ("Libraries") says why the hand-written writer stays.
#include "trace.hpp"  // src/: the record and the writer's formatting

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using clock_type = std::chrono::steady_clock;
using sluice::detail::trace::record;

std::vector<record> make_records(std::size_t n) {
  std::vector<record> all(n);
  const char* kinds[] = {"fill", "copy", "record", "wait", "copy_peer", "host_func"};
  for (std::size_t i = 0; i < n; ++i) {
    record& r = all[i];
    r.kind = kinds[i % 6];
    r.device = static_cast<int>(i % 2);
    r.stream = 1 + i % 8;
    r.seq = 1 + i / 8;
    r.host_thread = 1 + i % 3;
    r.enqueue_ns = 1000000000LL + static_cast<std::int64_t>(i) * 731;
    r.start_ns = r.enqueue_ns + 1234;
    r.end_ns = r.start_ns + 5678 + static_cast<std::int64_t>(i % 97);
    if (i % 6 == 1 || i % 6 == 4) r.bytes = 4096 << (i % 5);
    if (i % 6 == 4) r.path = "direct";
    if (i % 6 == 3) {
      r.from_stream = 1 + (i + 3) % 8;
      r.from_seq = r.seq;
    }
  }
  return all;
}

double us(std::int64_t ns, std::int64_t origin) {
  return static_cast<double>(ns - origin) / 1000.0;
}

//! The same two events with nlohmann-json.
void append_with_nlohmann(std::string& out, const record& r, std::int64_t origin) {
  nlohmann::json enqueue = {{"name", r.kind},
                            {"cat", "enqueue"},
                            {"ph", "i"},
                            {"s", "t"},
                            {"pid", 1000000},
                            {"tid", r.host_thread},
                            {"ts", us(r.enqueue_ns, origin)},
                            {"args", {{"stream", r.stream}, {"device", r.device}}}};
  out += enqueue.dump();
  nlohmann::json args = {
      {"seq", r.seq}, {"enqueued_us", us(r.enqueue_ns, origin)}, {"host_thread", r.host_thread}};
  if (r.bytes != 0) args["bytes"] = r.bytes;
  if (r.path != nullptr) args["path"] = r.path;
  if (r.from_stream != 0) {
    args["waits_for_stream"] = r.from_stream;
    args["waits_for_seq"] = r.from_seq;
  }
  nlohmann::json op = {{"name", r.kind},
                       {"cat", "op"},
                       {"ph", "X"},
                       {"pid", r.device},
                       {"tid", r.stream},
                       {"ts", us(r.start_ns, origin)},
                       {"dur", us(r.end_ns, r.start_ns)},
                       {"args", std::move(args)}};
  out += ",\n";
  out += op.dump();
}

template <class F>
double records_per_second(const std::vector<record>& all, int rounds, std::size_t* bytes, F f) {
  double best = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string out;
    out.reserve((1 << 20) + 4096);
    std::size_t total = 0;
    const auto t0 = clock_type::now();
    for (const record& r : all) {
      f(out, r, 1000000000LL);
      out += ",\n";
      if (out.size() >= (1 << 20)) {
        total += out.size();
        out.clear();
      }
    }
    const double s = std::chrono::duration<double>(clock_type::now() - t0).count();
    *bytes = total + out.size();
    best = std::max(best, static_cast<double>(all.size()) / s);
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 1000000;
  int rounds = 5;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--records=", 0) == 0) {
      n = static_cast<std::size_t>(std::max(1LL, std::atoll(a.c_str() + 10)));
    } else if (a.rfind("--rounds=", 0) == 0) {
      rounds = std::max(1, std::atoi(a.c_str() + 9));
    } else {
      std::fprintf(stderr, "usage: %s [--records=N] [--rounds=R]\n", argv[0]);
      return 2;
    }
  }
  const std::vector<record> all = make_records(n);
  std::size_t hand_bytes = 0, lib_bytes = 0;
  const double hand =
      records_per_second(all, rounds, &hand_bytes, sluice::detail::trace::append_record_events);
  const double lib = records_per_second(all, rounds, &lib_bytes, append_with_nlohmann);
  std::printf("sluice-bench-trace-writer: %zu records (2 events each), best of %d rounds\n", n,
              rounds);
  std::printf("hand-written (src/trace.cpp): %6.2f M records/s, %.1f MB\n", hand / 1e6,
              static_cast<double>(hand_bytes) / 1e6);
  std::printf("nlohmann-json dump()        : %6.2f M records/s, %.1f MB\n", lib / 1e6,
              static_cast<double>(lib_bytes) / 1e6);
  std::printf("hand-written / nlohmann: %.1fx\n", hand / lib);
  return 0;
}
