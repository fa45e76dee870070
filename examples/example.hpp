// examples/example.hpp: what the examples share. It is part of the
// examples, not of sluice, and uses only the public API: command-line options,
// the checks at the start of a run, intervals and their overlap, tracing, and
// reading device memory back through pinned memory to check it.
//
// Options of every example:
//   --trace=<file>              write a trace of the run (a backend that cannot trace
//                               says so and the example runs without)
//   --require-overlap=<percent> exit 1 when the measured overlap is below <percent>
//   --mib=<n>                   size of each buffer in MiB (larger on a GPU)
// Exit status: 0 ran and the data checks passed (and the overlap was at least
// --require-overlap), 1 otherwise (bad arguments included), 77 not enough devices.
#pragma once

#include <sluice/sluice.hpp>

#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <utility>
#include <vector>

namespace sluice_example {

struct options {
  std::string trace_file;       //!< --trace=<file>; empty: no trace
  double require_overlap = -1;  //!< --require-overlap=<percent>; negative: no requirement
  std::size_t mib = 0;          //!< --mib=<n>: bytes of each buffer, in MiB
  std::size_t bytes() const { return mib << 20U; }
};

//! What an example's body reports to run().
struct outcome {
  bool data_ok = false;        //!< the data the work moved is what it should be
  double overlap_percent = 0;  //!< the value --require-overlap is checked against
};

// --- intervals -------------------------------------------------------------

//! A time interval in milliseconds after a run's start.
struct interval {
  double begin = 0;
  double end = 0;
  double length() const { return end > begin ? end - begin : 0; }
};
using interval_set = std::vector<interval>;

//! Sorted, disjoint, without empty intervals: the time covered by `v`.
inline interval_set merged(interval_set v) {
  v.erase(std::remove_if(v.begin(), v.end(), [](const interval& i) { return i.length() <= 0; }),
          v.end());
  std::sort(v.begin(), v.end(),
            [](const interval& a, const interval& b) { return a.begin < b.begin; });
  interval_set out;
  for (const interval& i : v) {
    if (!out.empty() && i.begin <= out.back().end)
      out.back().end = std::max(out.back().end, i.end);
    else
      out.push_back(i);
  }
  return out;
}

//! Time covered by `v`.
inline double covered(const interval_set& v) {
  double sum = 0;
  for (const interval& i : merged(v)) sum += i.length();
  return sum;
}

//! The time covered by both `a` and `b`.
inline interval_set intersection(const interval_set& a, const interval_set& b) {
  const interval_set x = merged(a);
  const interval_set y = merged(b);
  interval_set out;
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < x.size() && j < y.size()) {
    const double lo = std::max(x[i].begin, y[j].begin);
    const double hi = std::min(x[i].end, y[j].end);
    if (lo < hi) out.push_back({lo, hi});
    if (x[i].end < y[j].end)
      ++i;
    else
      ++j;
  }
  return out;
}

//! `both` as a percentage of the shorter of `a` and `b` (0 when either is 0).
inline double percent_of_shorter(double both, double a, double b) {
  const double shorter = std::min(a, b);
  return shorter > 0 ? 100.0 * both / shorter : 0.0;
}

//! How the busy times of two streams overlapped; the members in this order, so
//! that `const auto [a_ms, b_ms, both, percent] = overlap_of(a, b);` names them.
struct busy_overlap {
  double a_ms = 0;     //!< time covered by `a`
  double b_ms = 0;     //!< time covered by `b`
  double both_ms = 0;  //!< time covered by both
  double percent = 0;  //!< both_ms as a percentage of the shorter of a_ms and b_ms
};

inline busy_overlap overlap_of(const interval_set& a, const interval_set& b) {
  busy_overlap r;
  r.a_ms = covered(a);
  r.b_ms = covered(b);
  r.both_ms = covered(intersection(a, b));
  r.percent = percent_of_shorter(r.both_ms, r.a_ms, r.b_ms);
  return r;
}

// --- events ----------------------------------------------------------------

//! An event that takes timestamps for sluice::elapsed().
inline sluice::event timing_event(sluice::device d) {
  sluice::event_options timing;
  timing.timing = true;
  return sluice::event(d, timing);
}

//! Milliseconds from `start` to `e` (timing events of one device, both complete).
inline double ms_after(const sluice::event& start, const sluice::event& e) {
  return sluice::elapsed(start, e).count();
}

inline const char* to_string(sluice::priority p) {
  switch (p) {
    case sluice::priority::low: return "low";
    case sluice::priority::normal: return "normal";
    case sluice::priority::high: return "high";
  }
  return "?";
}

// --- tracing ---------------------------------------------------------------

//! Starts a trace when a file was given and the backend traces; finish() writes
//! it. On backends that do not trace (errc::not_supported) it says so and the
//! example runs without a trace.
class trace_session {
 public:
  explicit trace_session(std::string file) : file_(std::move(file)) {
    if (file_.empty()) return;
    if (sluice::tracing()) {  // SLUICE_TRACE=<path> started one: that one is written at exit
      std::printf("trace: a trace is already being collected (SLUICE_TRACE?): --trace=%s ignored\n",
                  file_.c_str());
      return;
    }
    try {
      sluice::trace_begin(file_);
      active_ = true;
    } catch (const sluice::error& e) {
      if (e.code() != sluice::errc::not_supported) throw;
      std::printf("trace: tracing is not available on the %s backend (%s); running without\n",
                  sluice::backend_name(), e.what());
    }
  }
  ~trace_session() {
    if (!active_) return;
    try {
      (void)sluice::trace_end();       // an error path left it running
    } catch (const std::exception&) {  // NOLINT(bugprone-empty-catch): nothing to do on that path
    }
  }
  trace_session(const trace_session&) = delete;
  trace_session& operator=(const trace_session&) = delete;

  //! Call after synchronizing the work: operations still running are left out.
  void finish() {
    if (!active_) return;
    active_ = false;
    const std::size_t operations = sluice::trace_end();
    std::printf("trace: %zu operations written to %s (sluice trace report %s)\n", operations,
                file_.c_str(), file_.c_str());
  }

 private:
  std::string file_;
  bool active_ = false;
};

// --- set-up ----------------------------------------------------------------

//! One range of device memory: start and size in bytes.
struct memory_range {
  void* data;
  std::size_t bytes;
};

//! The set-up before the measured work: zeroes `memory` (which also touches
//! every page) on a stream of its own on `d` and waits for it. The measured
//! streams get no work before the measurement starts. (On the host backend an
//! operation enqueued on a stream whose work has only just drained was seen to
//! start milliseconds late on a loaded machine; fresh streams do not show it.)
inline void zero_on_own_stream(sluice::device d, const std::vector<memory_range>& memory) {
  const sluice::stream setup(d);
  for (const memory_range& m : memory) sluice::fill(setup, m.data, 0, m.bytes);
  setup.synchronize();
}

// --- checks ----------------------------------------------------------------

//! Reads a few bytes at the start, middle and end of device memory [p, p + bytes)
//! back into pinned memory on `s` and checks that each equals `value`. Prints
//! what differs. Synchronizes `s`.
inline bool check_bytes(sluice::stream_ref s, const void* p, std::size_t bytes, unsigned char value,
                        const char* what) {
  constexpr std::size_t sample = 64;
  const std::size_t n = std::min(sample, bytes);
  const std::size_t offsets[3] = {0, bytes / 2 - std::min(bytes / 2, n / 2), bytes - n};
  sluice::pinned_buffer<unsigned char> back(3 * sample);
  for (std::size_t k = 0; k < 3; ++k)
    sluice::copy(s, back.data() + k * sample, static_cast<const unsigned char*>(p) + offsets[k], n);
  s.synchronize();
  for (std::size_t k = 0; k < 3; ++k)
    for (std::size_t i = 0; i < n; ++i)
      if (back[k * sample + i] != value) {
        std::printf("check: %s: byte %zu is 0x%02x, expected 0x%02x\n", what, offsets[k] + i,
                    back[k * sample + i], value);
        return false;
      }
  return true;
}

//! Reads `chunks` samples of `sample` bytes each from `samples` (device
//! memory) back on `s` and checks that sample i holds value_of(i) throughout.
//! Prints the first byte that differs, naming it with `what`. Synchronizes `s`.
template <class ValueOf>
bool check_chunk_samples(sluice::stream_ref s, const unsigned char* samples, std::size_t chunks,
                         std::size_t sample, ValueOf value_of, const char* what) {
  sluice::pinned_buffer<unsigned char> back(chunks * sample);
  sluice::copy(s, back.data(), samples, chunks * sample);
  s.synchronize();
  for (std::size_t i = 0; i < chunks; ++i)
    for (std::size_t j = 0; j < sample; ++j)
      if (back[i * sample + j] != value_of(i)) {
        std::printf("check: %s %zu: byte %zu is 0x%02x, expected 0x%02x\n", what, i, j,
                    back[i * sample + j], value_of(i));
        return false;
      }
  return true;
}

// --- the program around an example ----------------------------------------

struct description {
  const char* name;     //!< the program's name, e.g. "sluice-example-dual-pipe"
  const char* summary;  //!< one line: what it shows
  int devices_needed;   //!< 1, or 2 for the two-device pipeline
  std::size_t default_mib;
};

inline bool parse_number(const char* text, double& out) {
  char* end = nullptr;
  errno = 0;
  out = std::strtod(text, &end);
  return errno == 0 && end != text && *end == '\0';
}

inline bool parse(int argc, char** argv, const description& d, options& o, bool& help) {
  o.mib = d.default_mib;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    double v = 0;
    if (a == "--help" || a == "-h") {
      help = true;
    } else if (a.rfind("--trace=", 0) == 0 && a.size() > 8) {
      o.trace_file = a.substr(8);
    } else if (a.rfind("--require-overlap=", 0) == 0 && parse_number(a.c_str() + 18, v) && v >= 0 &&
               v <= 100) {
      o.require_overlap = v;
    } else if (a.rfind("--mib=", 0) == 0 && parse_number(a.c_str() + 6, v) && v >= 1 && v <= 4096 &&
               static_cast<double>(static_cast<std::size_t>(v)) == v) {
      o.mib = static_cast<std::size_t>(v);
    } else {
      std::fprintf(stderr, "%s: unknown or bad argument: %s\n", d.name, a.c_str());
      return false;
    }
  }
  return true;
}

//! Parses the options, checks the devices, prints the backend, runs `body` and
//! turns its outcome (or a sluice::error) into the exit status.
template <class Body>
int run(int argc, char** argv, const description& d, Body body) {
  options o;
  bool help = false;
  if (!parse(argc, argv, d, o, help) || help) {
    std::fprintf(help ? stdout : stderr,
                 "usage: %s [--trace=<file>] [--require-overlap=<percent>] [--mib=<n>]\n"
                 "  %s\n"
                 "  --trace=<file>               write a sluice trace\n"
                 "  --require-overlap=<percent>  exit 1 when the overlap is below <percent>\n"
                 "  --mib=<n>                    MiB per buffer (default %zu)\n",
                 d.name, d.summary, d.default_mib);
    return help ? 0 : 1;
  }
  try {
    const int devices = sluice::device_count();
    if (devices == 0) {
      std::printf("%s: no %s device: nothing run\n", d.name, sluice::backend_name());
      return 77;
    }
    std::printf("%s: %s\n", d.name, d.summary);
    std::printf("backend: %s (%s), %d device%s\n", sluice::backend_name(),
                sluice::backend_version().c_str(), devices, devices == 1 ? "" : "s");
    if (devices < d.devices_needed) {
      std::printf("%s: needs %d %s devices, found %d: nothing run\n", d.name, d.devices_needed,
                  sluice::backend_name(), devices);
      return 77;
    }
    const outcome r = body(o);
    if (!r.data_ok) {
      std::printf("%s: FAIL: the data check failed\n", d.name);
      return 1;
    }
    if (o.require_overlap >= 0 && r.overlap_percent < o.require_overlap) {
      std::printf("%s: FAIL: overlap %.1f%% is below --require-overlap=%g%%\n", d.name,
                  r.overlap_percent, o.require_overlap);
      return 1;
    }
    std::printf("%s: PASS: data checked%s\n", d.name,
                o.require_overlap >= 0 ? ", overlap at least as required" : "");
    return 0;
  } catch (const sluice::error& e) {
    std::fprintf(stderr, "%s: sluice error [%s]: %s\n", d.name, sluice::to_string(e.code()),
                 e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: error: %s\n", d.name, e.what());
  }
  return 1;
}

}  // namespace sluice_example
