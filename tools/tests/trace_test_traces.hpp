// Made-up traces that the tests of several parts of `sluice trace report`
// read (the analyzer, the text report, the timeline).
#pragma once

#include <random>
#include <string>
#include <vector>

namespace trace_test {

// A trace with stream names (written since stream_options::name) and
// trace_ranges. Stream 1 (device 0) "upload": copy 0-10, copy 20-30, each in
// a range "chunk" (0-10, 20-31), both in "all" (0-40). Stream 2 (device 0),
// unnamed: fill 5-25. Stream 3 (device 1) "it's": a range only, 50-60.
inline const char* const named_trace = R"json({"traceEvents": [
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 1, "args": {"name": "d0/s1 upload (native priority -1)", "stream_name": "upload", "native_priority": -1}},
{"ph": "M", "name": "thread_name", "pid": 0, "tid": 2, "args": {"name": "d0/s2 (native priority 0)", "native_priority": 0}},
{"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": "d1/s3 it's (native priority 0)", "stream_name": "it's", "native_priority": 0}},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 10, "args": {"seq": 2}},
{"name": "chunk", "cat": "range", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 10},
{"name": "copy", "cat": "op", "ph": "X", "pid": 0, "tid": 1, "ts": 20, "dur": 10, "args": {"seq": 5}},
{"name": "chunk", "cat": "range", "ph": "X", "pid": 0, "tid": 1, "ts": 20, "dur": 11},
{"name": "all", "cat": "range", "ph": "X", "pid": 0, "tid": 1, "ts": 0, "dur": 40},
{"name": "fill", "cat": "op", "ph": "X", "pid": 0, "tid": 2, "ts": 5, "dur": 20, "args": {"seq": 1}},
{"name": "mine", "cat": "range", "ph": "X", "pid": 1, "tid": 3, "ts": 50, "dur": 10}
]})json";

// A trace of three streams of 3000 operations each (past the analyzer's
// blocks of 1024), times in whole microseconds (sums exact in any order);
// streams 2 and 3 wait, every 50th operation, for the stream before.
struct made_trace {
  std::vector<std::string> events;  // "op" events and ranges, in seq order per stream
  double busy[3] = {0, 0, 0};       // each stream's operations do not overlap
};

inline made_trace make_trace() {
  made_trace t;
  std::mt19937 random(7);
  for (int s = 1; s <= 3; ++s) {
    long time = 0;
    for (int seq = 1; seq <= 3000; ++seq) {
      const long dur = 1 + static_cast<long>(random() % 20);
      const bool wait = s > 1 && seq % 50 == 0;
      std::string args = "{\"seq\": " + std::to_string(seq);
      if (wait)
        args += ", \"waits_for_stream\": " + std::to_string(s - 1) +
                ", \"waits_for_seq\": " + std::to_string(seq - 1);
      args += "}";
      t.events.push_back(std::string("{\"name\": \"") + (wait ? "wait" : "copy") +
                         "\", \"cat\": \"op\", \"ph\": \"X\", \"pid\": 0, \"tid\": " +
                         std::to_string(s) + ", \"ts\": " + std::to_string(time) +
                         ", \"dur\": " + std::to_string(dur) + ", \"args\": " + args + "}");
      if (!wait) t.busy[s - 1] += static_cast<double>(dur);
      if (seq % 100 == 0)
        t.events.push_back(
            "{\"name\": \"r\", \"cat\": \"range\", \"ph\": \"X\", \"pid\": 0, "
            "\"tid\": " +
            std::to_string(s) + ", \"ts\": " + std::to_string(time) +
            ", \"dur\": " + std::to_string(dur) + "}");
      time += dur + static_cast<long>(random() % 3);
    }
  }
  return t;
}

inline std::string as_json(const std::vector<std::string>& events) {
  std::string json = "{\"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) json += (i ? ",\n" : "") + events[i];
  return json + "\n]}\n";
}

}  // namespace trace_test
