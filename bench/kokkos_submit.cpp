// sluice-bench-kokkos-submit-<backend>: what sluice::kokkos::submit costs the
// caller. Per row, the same Kokkos::parallel_for of n elements is enqueued on
// one sluice stream s two ways, in the same run:
//   - submit: sluice::kokkos::submit(s, f), f launching the parallel_for on
//     the instance it is given;
//   - direct: GPU backends: the parallel_for launched directly on
//     sluice::kokkos::instance(s), obtained once before the measurement (the
//     same Kokkos instance, on s's native stream). Host backend: there is no
//     instance on a host stream, so the direct side is s.host_func running the
//     same parallel_for on Kokkos::DefaultHostExecutionSpace{} (the output says
//     so): what submit adds to a host function.
// The target: submit within 5 % or 100 ns of direct, median of the per-call
// times; the figure that counts is a GPU's (Kokkos::Cuda).
//
//   sluice-bench-kokkos-submit-<backend> [--batches=N] [--calls=M] [--json=FILE]
//
// Method (printed too): a batch is M enqueues (default 100) between two
// steady_clock reads, ns per call = time / M; the stream is synchronized after
// every batch, outside the timed region, so every batch starts on an idle
// stream and a queue never fills. 5 untimed warm-up batches per side, then N
// timed batches per side (default 100), alternating which side goes first.
// After the measurement the kernels' data is read back and checked (every
// launch adds 1 to its n elements): a bench whose kernels did not run fails.
// Both sides pay the Kokkos Tools callbacks sluice::kokkos registers for the
// whole process (tracing off: they return at once outside a submit).
// Targets are reported, not asserted: a MISS exits 0; errors exit 1, no device 77.
#include "bench_common.hpp"

#include <sluice/kokkos.hpp>
#include <sluice/sluice.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using sluice_bench::build_kind;
using sluice_bench::median;
using sluice_bench::now_utc;

using clock_type = std::chrono::steady_clock;
using exec_t = sluice::kokkos::execution_space;
using view_t =
    Kokkos::View<int*, sluice::kokkos::memory_space, Kokkos::MemoryTraits<Kokkos::Unmanaged>>;

constexpr int warmup_batches = 5;
constexpr std::size_t max_n = 1024;
constexpr std::size_t sizes[] = {1, 32, 1024};
constexpr double target_ratio = 1.05;
constexpr double target_ns = 100.0;

//! The measured work: one parallel_for of n elements on `exec`, each adding 1.
//! A named function: nvcc wants one around a KOKKOS_LAMBDA.
void add_one(const exec_t& exec, const view_t& v, std::size_t n) {
  Kokkos::parallel_for(
      "sluice_bench_add_one", Kokkos::RangePolicy<exec_t>(exec, 0, n),
      KOKKOS_LAMBDA(const std::size_t i) { v(i) += 1; });
}

struct options {
  int batches = 100;
  int calls = 100;
  std::string json;
  std::string command;
};

struct row {
  std::size_t n = 0;
  std::vector<double> submit_ns, direct_ns;  // per-call time of each batch
  double submit_median() const { return median(submit_ns); }
  double direct_median() const { return median(direct_ns); }
  double submit_min() const { return *std::min_element(submit_ns.begin(), submit_ns.end()); }
  double direct_min() const { return *std::min_element(direct_ns.begin(), direct_ns.end()); }
  double diff() const { return submit_median() - direct_median(); }
  double ratio() const { return direct_median() > 0 ? submit_median() / direct_median() : 0.0; }
  bool met() const {
    return diff() <= target_ns || submit_median() <= target_ratio * direct_median();
  }
};

//! ns per call of one batch of `calls` enqueues; the stream is synchronized after the clock stops.
template <class Call>
double time_batch(int calls, const Call& call, sluice::stream_ref s) {
  const auto start = clock_type::now();
  for (int i = 0; i < calls; ++i) call();
  const auto stop = clock_type::now();
  s.synchronize();
  return std::chrono::duration<double, std::nano>(stop - start).count() / calls;
}

//! The direct side's description, by backend.
const char* direct_description() {
#if defined(SLUICE_BACKEND_HOST)
  return "s.host_func running the parallel_for on Kokkos::DefaultHostExecutionSpace{} (the host "
         "backend has no Kokkos instance on a stream: this is what submit adds to a host "
         "function)";
#else
  return "the parallel_for launched directly on sluice::kokkos::instance(s), the same Kokkos "
         "instance, obtained once before the measurement";
#endif
}

std::vector<row> measure(const options& o, sluice::stream_ref s, const view_t& v) {
#if !defined(SLUICE_BACKEND_HOST)
  const exec_t direct_exec = sluice::kokkos::instance(s);
#endif
  std::vector<row> rows;
  for (const std::size_t n : sizes) {
    row r;
    r.n = n;
    const auto submit_call = [s, v, n] {
      sluice::kokkos::submit(s, [v, n](const exec_t& exec) { add_one(exec, v, n); });
    };
#if defined(SLUICE_BACKEND_HOST)
    const auto direct_call = [s, v, n] {
      s.host_func([v, n] { add_one(Kokkos::DefaultHostExecutionSpace{}, v, n); });
    };
#else
    const auto direct_call = [&direct_exec, v, n] { add_one(direct_exec, v, n); };
#endif
    for (int b = 0; b < warmup_batches; ++b) {
      time_batch(o.calls, submit_call, s);
      time_batch(o.calls, direct_call, s);
    }
    for (int b = 0; b < o.batches; ++b) {
      if (b % 2 == 0) {
        r.submit_ns.push_back(time_batch(o.calls, submit_call, s));
        r.direct_ns.push_back(time_batch(o.calls, direct_call, s));
      } else {
        r.direct_ns.push_back(time_batch(o.calls, direct_call, s));
        r.submit_ns.push_back(time_batch(o.calls, submit_call, s));
      }
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

//! Every launch of n elements added 1 to elements [0, n): reads the data back
//! and compares. Prints the first difference.
bool check(const options& o, sluice::stream_ref s, const sluice::device_buffer<int>& data) {
  sluice::pinned_buffer<int> back(max_n);
  sluice::copy(s, back.data(), data.data(), max_n * sizeof(int));
  s.synchronize();
  const long per_row = 2L * (warmup_batches + o.batches) * o.calls;  // both sides
  for (std::size_t i = 0; i < max_n; ++i) {
    long expected = 0;
    for (const std::size_t n : sizes) expected += i < n ? per_row : 0;
    if (back[i] != expected) {
      std::printf("check: element %zu is %d, expected %ld: the kernels did not all run\n", i,
                  back[i], expected);
      return false;
    }
  }
  return true;
}

void write_json(std::FILE* f, const options& o, const std::string& date,
                const std::vector<row>& rows) {
  std::fprintf(f,
               "{\n  \"bench\": \"kokkos_submit\",\n  \"date\": \"%s\",\n  \"backend\": \"%s\",\n"
               "  \"backend_version\": \"%s\",\n  \"device\": \"%s\",\n"
               "  \"kokkos_execution_space\": \"%s\",\n  \"kokkos_version\": %d,\n"
               "  \"build\": \"%s\",\n  \"batches\": %d,\n  \"calls_per_batch\": %d,\n"
               "  \"direct\": \"%s\",\n  \"tracing\": %s,\n  \"target\": \"within 5 %% or 100 "
               "ns\",\n  \"rows\": [\n",
               date.c_str(), sluice::backend_name(), sluice::backend_version().c_str(),
               sluice::device(0).name().c_str(), exec_t::name(), KOKKOS_VERSION, build_kind(),
               o.batches, o.calls, direct_description(), sluice::tracing() ? "true" : "false");
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const row& r = rows[i];
    std::fprintf(f,
                 "    {\"id\": \"parallel_for_%zu\", \"n\": %zu, \"submit_median_ns\": %.1f, "
                 "\"submit_min_ns\": %.1f, \"direct_median_ns\": %.1f, \"direct_min_ns\": %.1f, "
                 "\"diff_ns\": %.1f, \"ratio\": %.4f, \"met\": %s}%s\n",
                 r.n, r.n, r.submit_median(), r.submit_min(), r.direct_median(), r.direct_min(),
                 r.diff(), r.ratio(), r.met() ? "true" : "false", i + 1 < rows.size() ? "," : "");
  }
  std::fprintf(f, "  ]\n}\n");
}

int usage(const char* name, const char* bad) {
  std::fprintf(stderr,
               "%s: unknown or bad argument '%s'\nusage: %s [--batches=N (>=1, default 100)] "
               "[--calls=M (1..1000, default 100)] [--json=FILE]\n",
               name, bad, name);
  return 2;
}

int run(const options& o) {
  std::FILE* json = nullptr;
  if (!o.json.empty()) {  // a bad path fails before the measurement
    json = std::fopen(o.json.c_str(), "w");
    if (json == nullptr)
      throw std::runtime_error("cannot write " + o.json + ": " + std::strerror(errno));
  }
  const sluice::device dev(0);
  const sluice::stream s(dev);
  sluice::device_buffer<int> data(dev, max_n);
  sluice::fill(s, data.data(), 0, max_n * sizeof(int));
  s.synchronize();
  const view_t v = sluice::kokkos::view(data);
  const std::string date = now_utc();

  std::printf(
      "sluice::kokkos::submit vs the same Kokkos::parallel_for enqueued directly (same run)\n");
  std::printf(
      "command: %s\ndate:    %s\nbackend: %s\ndevice:  %s\nKokkos:  %d, execution space %s\n"
      "build:   %s\nmethod:\n",
      o.command.c_str(), date.c_str(), sluice::backend_version().c_str(), dev.name().c_str(),
      KOKKOS_VERSION, exec_t::name(), build_kind());
  std::printf(
      "  - submit: sluice::kokkos::submit(s, f), f launching one parallel_for of n "
      "elements on the instance it is given\n");
  std::printf("  - direct: %s\n", direct_description());
  std::printf(
      "  - both sides' launches go through the Kokkos Tools callbacks that sluice::kokkos "
      "registers for the whole process (kernels on sluice's timeline; tracing is %s): "
      "the difference is submit's own cost, not that of linking sluice::kokkos\n",
      sluice::tracing() ? "ON (SLUICE_TRACE): submit's kernels are traced" : "off");
  std::printf(
      "  - enqueue cost per call: %d calls between two steady_clock reads; s synchronized after "
      "each batch, outside the timed region\n"
      "  - %d untimed warm-up batches per side, then %d timed batches per side, alternating which "
      "side goes first; median and min of the per-call times\n"
      "  - target: submit within 5 %% or 100 ns of direct (median); reported, "
      "not asserted\n\n",
      o.calls, warmup_batches, o.batches);
  std::fflush(stdout);

  const std::vector<row> rows = measure(o, s, v);
  std::printf("%-18s %6s %14s %14s %14s %14s %10s %8s %s\n", "row", "n", "submit med ns",
              "submit min ns", "direct med ns", "direct min ns", "diff ns", "ratio",
              "within 5 % or 100 ns");
  int met = 0;
  for (const row& r : rows) {
    met += r.met();
    std::printf("%-18s %6zu %14.1f %14.1f %14.1f %14.1f %10.1f %8.3f %s\n",
                ("parallel_for_" + std::to_string(r.n)).c_str(), r.n, r.submit_median(),
                r.submit_min(), r.direct_median(), r.direct_min(), r.diff(), r.ratio(),
                r.met() ? "PASS" : "MISS");
  }
  std::printf("target met by %d of %zu rows (reported, not asserted)\n", met, rows.size());
  const bool ok = check(o, s, data);
  std::printf("data: %s\n", ok ? "every launch ran (checked)" : "FAIL");
  if (json != nullptr) {
    write_json(json, o, date, rows);
    if (std::fclose(json) != 0) throw std::runtime_error("cannot write " + o.json);
    std::printf("json:    %s\n", o.json.c_str());
  }
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  options o;
  for (int i = 0; i < argc; ++i) o.command += (i > 0 ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    try {
      if (a.rfind("--batches=", 0) == 0)
        o.batches = std::stoi(a.substr(10));
      else if (a.rfind("--calls=", 0) == 0)
        o.calls = std::stoi(a.substr(8));
      else if (a.rfind("--json=", 0) == 0 && a.size() > 7)
        o.json = a.substr(7);
      else
        return usage(argv[0], argv[i]);
    } catch (const std::exception&) {  // std::stoi: not a number
      return usage(argv[0], argv[i]);
    }
    if (o.batches < 1 || o.calls < 1 || o.calls > 1000) return usage(argv[0], argv[i]);
  }
  try {
    // A GPU backend without its GPU: Kokkos cannot start; nothing measured.
    if (sluice::device_count() == 0) {
      std::printf("no %s device: nothing measured\n", sluice::backend_name());
      return 77;
    }
    const Kokkos::ScopeGuard kokkos;
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "kokkos_submit: error: %s\n", e.what());
    return 1;
  }
}
