// sluice-probe-held-calls: raw CUDA only (no sluice code). Which CUDA runtime
// calls block while one stream is held, and past which count.
//
// Found on 2x H200 (driver 580.159.04, CUDA 13.0): with one stream held on a
// stream memory wait (cuStreamWaitValue64 on a host-mapped word, the way a
// sluice gate holds one: raw::wait_value), about the 34th
// cudaStreamCreateWithFlags blocked until the hold was released. This probe
// catalogues the call families sluice makes.
//
// Each case runs in a fresh context (cudaDeviceReset first). It makes what it
// needs before the hold, holds a non-blocking stream, and a worker thread then
// runs the case's calls --count times, timing each. The main thread is a
// watchdog: a call that has not returned within --block-ms is a block point.
// The watchdog then releases the hold, waits (at most 10 s) for the call to
// return, waits for the device to drain, holds the same stream again on a new
// value and lets the worker go on, so that later block points are found too.
// A case stops after --max-blocks block points (a call that blocks every time
// would otherwise take count x block-ms).
//
// One line per case (per phase, for the cases of several phases), key=value:
//   case=stream_create calls=cudaStreamCreateWithFlags(NonBlocking) count=128 completed=128
//   blocked_at=34,68 blocked_in=cudaStreamCreateWithFlags,cudaStreamCreateWithFlags
//   blocked_for_ms=501.0,500.9 returned_after_release_ms=0.21,0.19 max_unblocked_us=48.2
//   median_unblocked_us=5.9 errors=0 result=BLOCKS
// (on one line). blocked_at: the 1-based calls that blocked ("none"); blocked_in:
// the vendor call each was in; blocked_for_ms: from its start to the release;
// returned_after_release_ms: from the release to its return; *_unblocked_us:
// the calls that did not block; errors: failed calls, with the first one named;
// result: BLOCKS or "never blocked" (last, so that the rest of the line is the
// value). A case that cannot run here prints `case=NAME skipped: WHY`.
// --csv=FILE writes the same rows (lists separated by ';').
//
// Exit status: 0 when every case ran, whatever they found; 2 on a usage error
// or a failed set-up call; 3 when a call had not returned 10 s after the
// release; 4 when the device had not drained 10 s after a release.
//
//   sluice-probe-held-calls [--count=N] [--block-ms=M] [--max-blocks=B]
//                           [--cases=a,b,c] [--device=D] [--csv=FILE]
//
// CUDA_DEVICE_MAX_CONNECTIONS is used as inherited (sluice sets 32 where it is
// unset; this probe sets nothing): run it both ways.
//
// The harness (the hold, the worker and its watchdog, the report) is in
// harness.hpp, the cases by family in cases.hpp.
#include "cases.hpp"

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <iterator>

namespace held_calls {
namespace {

struct case_entry {
  const char* name;
  results (*run)(probe_env&);
};

// In this order (lock_during_create needs stream_create's block point).
const case_entry all_cases[] = {
    {"stream_create", stream_create},
    {"stream_create_priority", stream_create_priority},
    {"stream_create_destroy", stream_create_destroy},
    {"stream_destroy", stream_destroy},
    {"stream_destroy_busy", stream_destroy_busy},
    {"event_create", event_create},
    {"event_create_timing", event_create_timing},
    {"event_destroy", event_destroy},
    {"event_record_wait", event_record_wait},
    {"host_func_many_streams", host_func_many_streams},
    {"host_func_held_stream", host_func_held_stream},
    {"enqueue_held_stream", enqueue_held_stream},
    {"host_alloc", host_alloc},
    {"host_free", host_free},
    {"malloc", malloc_case},
    {"free", free_case},
    {"pool", pool},
    {"malloc_async", malloc_async},
    {"ipc", ipc},
    {"peer", peer},
    {"stream_recreate", stream_recreate},
    {"lock_during_create", lock_during_create},
};

bool wanted(const options& o, const std::string& name) {
  return o.cases.empty() || std::find(o.cases.begin(), o.cases.end(), name) != o.cases.end();
}

int usage() {
  std::fprintf(stderr,
               "usage: sluice-probe-held-calls [--count=N] [--block-ms=M] [--max-blocks=B] "
               "[--cases=a,b,c] [--device=D] [--csv=FILE]\ncases:");
  for (const case_entry& c : all_cases) std::fprintf(stderr, " %s", c.name);
  std::fprintf(stderr, "\n");
  return 2;
}

bool parse(int argc, char** argv, options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const std::size_t eq = a.find('=');
    if (eq == std::string::npos) return false;
    const std::string key = a.substr(0, eq);
    const std::string value = a.substr(eq + 1);
    if (key == "--count") {
      o.count = std::atoi(value.c_str());
    } else if (key == "--block-ms") {
      o.block_ms = std::atoi(value.c_str());
    } else if (key == "--max-blocks") {
      o.max_blocks = std::atoi(value.c_str());
    } else if (key == "--device") {
      o.device = std::atoi(value.c_str());
    } else if (key == "--csv") {
      o.csv = value;
    } else if (key == "--cases") {
      for (std::size_t at = 0; at <= value.size();) {
        const std::size_t comma = std::min(value.find(',', at), value.size());
        const std::string name = value.substr(at, comma - at);
        at = comma + 1;
        if (name.empty()) continue;
        if (std::none_of(std::begin(all_cases), std::end(all_cases),
                         [&](const case_entry& c) { return name == c.name; })) {
          std::fprintf(stderr, "sluice-probe-held-calls: unknown case %s\n", name.c_str());
          return false;
        }
        o.cases.push_back(name);
      }
    } else {
      return false;
    }
  }
  return o.count > 0 && o.block_ms > 0 && o.max_blocks > 0 && o.device >= 0;
}

void print_header(const probe_env& env) {
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, env.opt.device), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  check(cudaDriverGetVersion(&driver), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&runtime), "cudaRuntimeGetVersion");
  std::string proc = "(none)";
  std::ifstream version("/proc/driver/nvidia/version");
  if (version) std::getline(version, proc);
  std::printf("sluice-probe-held-calls: raw CUDA; which calls block while one stream is held\n");
  std::printf("device %d of %d: %s\n", env.opt.device, env.devices, prop.name);
  std::printf("driver: cudaDriverGetVersion=%d runtime=%d; /proc/driver/nvidia/version: %s\n",
              driver, runtime, proc.c_str());
  std::printf("CUDA_DEVICE_MAX_CONNECTIONS=%s (as inherited; unset means the driver's default)\n",
              connections());
  std::printf(
      "count=%d block_ms=%d max_blocks=%d; each case in a fresh context (cudaDeviceReset)\n",
      env.opt.count, env.opt.block_ms, env.opt.max_blocks);
  std::fflush(stdout);
}

}  // namespace
}  // namespace held_calls

int main(int argc, char** argv) {
  using namespace held_calls;
  raw::program = "sluice-probe-held-calls";
  probe_env env;
  if (!parse(argc, argv, env.opt)) return usage();
  check(cudaGetDeviceCount(&env.devices), "cudaGetDeviceCount");
  if (env.opt.device >= env.devices) {
    std::fprintf(stderr, "sluice-probe-held-calls: --device=%d, but %d device(s)\n", env.opt.device,
                 env.devices);
    return 2;
  }
  check(cudaSetDevice(env.opt.device), "cudaSetDevice");
  check(cudaFree(nullptr), "cudaFree(0)");
  env.wait = raw::wait_entry();
  print_header(env);
  if (!env.opt.csv.empty()) {
    csv_file = std::fopen(env.opt.csv.c_str(), "w");
    if (csv_file == nullptr) {
      std::fprintf(stderr, "sluice-probe-held-calls: cannot write %s\n", env.opt.csv.c_str());
      return 2;
    }
    std::fprintf(csv_file,
                 "max_connections,case,calls,count,completed,blocked_at,blocked_in,blocked_for_ms,"
                 "returned_after_release_ms,max_unblocked_us,median_unblocked_us,errors,"
                 "first_error,notes,result\n");
  }
  if (wanted(env.opt, "lock_during_create") && !wanted(env.opt, "stream_create")) {
    std::printf("(lock_during_create needs stream_create's block point: stream_create runs too)\n");
    env.opt.cases.push_back("stream_create");
  }
  for (const case_entry& c : all_cases) {
    if (!wanted(env.opt, c.name)) continue;
    fresh_context(env, {env.opt.device});
    for (const phase_result& r : c.run(env)) report(r);
  }
  if (csv_file != nullptr) std::fclose(csv_file);
  return 0;
}
