// The declarations of every environment variable sluice reads, and the only
// reads of the environment (settings.hpp says why).
#include "settings.hpp"

#include "checks.hpp"
#include "environment.hpp"

#include <climits>
#include <cstdlib>
#include <cstring>

namespace sluice::detail::settings {

namespace {

constexpr declaration integer_setting(setting id, const char* name, int low, int high, int fallback,
                                      const char* exists_in, const char* what,
                                      const char* shown_default = nullptr,
                                      const char* shown_range = nullptr,
                                      const char* of = "sluice") {
  return {id,       name,          of,          value_type::integer, low, high,
          fallback, shown_default, shown_range, exists_in,           what};
}

constexpr declaration other_setting(setting id, const char* name, value_type type,
                                    const char* shown_default, const char* shown_range,
                                    const char* exists_in, const char* what,
                                    const char* of = "sluice") {
  return {id, name, of, type, 0, 0, 0, shown_default, shown_range, exists_in, what};
}

constexpr const char* gpu_backends = "sluice::cuda, sluice::hip";
constexpr const char* comm = "sluice::comm";
constexpr const char* every_backend = "every backend";
constexpr const char* cuda_backend = "sluice::cuda";
constexpr const char* launcher_range = "0 or more (another value is skipped)";

// The order of `setting`; the reference's table lists them in this order.
constexpr declaration declarations[] = {
    // --- the host backend
    integer_setting(setting::host_devices, "SLUICE_HOST_DEVICES", 1, 64, 2, "sluice::host",
                    "How many devices the host backend simulates. Read once, when the backend "
                    "starts; a bad value makes every call that needs the backend throw "
                    "`errc::invalid_argument`, naming the variable and the range."),
    integer_setting(setting::host_slots, "SLUICE_HOST_SLOTS", 1, 256, 0, "sluice::host",
                    "Worker threads per simulated device that execute stream work (host "
                    "functions run on a pool of their own that grows as needed). Read once, "
                    "when the backend starts, like `SLUICE_HOST_DEVICES`.",
                    "hardware threads (`std::thread::hardware_concurrency()`, 1 if unknown)"),
    integer_setting(setting::host_chaos, "SLUICE_HOST_CHAOS", 0, 2147483647, 0, "sluice::host",
                    "The seed of the host backend's chaos: random delays where the semantics "
                    "allow them (design.md \"Chaos, mutations, stress\"); 0: none. Read once, "
                    "when the backend starts; `backend_version()` names the seed.",
                    "0 (off)"),
    // --- every backend
    other_setting(setting::diagnose, "SLUICE_DIAGNOSE", value_type::on_off, "off",
                  "on: any value but empty and `0`", every_backend,
                  "Warnings on stderr about misuse that is legal but slow or suspect, once per "
                  "kind and call site ([Diagnostics](#diagnostics)). Read once, at the first "
                  "check."),
    other_setting(setting::trace, "SLUICE_TRACE", value_type::path, "unset (no trace)",
                  "a file name; `%r`: the rank", every_backend,
                  "Starts a trace when the backend starts and writes it to this file at "
                  "process exit, one file per rank ([Tracing](#tracing)). Ignored, with a "
                  "message on stderr, by a build with `-DSLUICE_TRACING=OFF`."),
    // --- the GPU backends
    other_setting(setting::trace_source, "SLUICE_TRACE_SOURCE", value_type::choice, "`cupti`",
                  "`cupti`, `events`", gpu_backends,
                  "What times a trace's device operations, read at each `trace_begin`: "
                  "CUPTI where libcupti loads and starts (else timing events, and the trace "
                  "says why; HIP always uses timing events), or timing events. Another value "
                  "makes `trace_begin` throw `errc::invalid_argument`."),
    other_setting(setting::trace_counter, "SLUICE_TRACE_COUNTER", value_type::on_off,
                  "the clocksource decides: on where it is `tsc`, and on aarch64",
                  "`0`: off; any other value: on", cuda_backend,
                  "Whether a CUPTI trace stamps enqueues with the CPU's counter "
                  "(`cpu_counter`, mapped onto the host clock at `trace_end`) or with the "
                  "host clock (`host_clock`)."),
    other_setting(setting::cupti_library, "SLUICE_CUPTI_LIBRARY", value_type::path,
                  "the toolkit's libcupti, loaded only where the CUDA driver is", "a library",
                  cuda_backend,
                  "The CUPTI library a CUPTI trace loads, also where no CUDA driver is loaded "
                  "(the tests name the simulated runtime, which is also a CUPTI)."),
    integer_setting(setting::cupti_buffers, "SLUICE_CUPTI_BUFFERS", 0, INT_MAX, 2, cuda_backend,
                    "How many CUPTI activity buffers `trace_begin` prepares.", nullptr,
                    "a count (another value: the default)"),
    other_setting(setting::cupti_correlation, "SLUICE_CUPTI_CORRELATION", value_type::choice,
                  "`callbacks`", "`callbacks`, `external`, `none` (another value: the default)",
                  cuda_backend,
                  "How CUPTI's activities are tied to sluice's operations: runtime-API "
                  "callbacks, or external-correlation records; `none` ties none (a "
                  "diagnosis of CUPTI's own cost: no operation gets device times)."),
    other_setting(setting::host_func_path, "SLUICE_HOST_FUNC_PATH", value_type::choice,
                  "the platform's (`kernel` on CUDA and HIP's NVIDIA platform, `callback` on "
                  "AMD), `signal` where launches are serialized",
                  "`kernel`, `signal`, `callback`, `auto`", gpu_backends,
                  "How the device tells sluice that a host function's turn has come and how "
                  "the stream waits for it ([GPU backend settings](#gpu-backend-settings)); "
                  "read once, at the first host function. Another value makes `host_func` "
                  "throw `errc::invalid_argument`."),
    integer_setting(setting::stream_reserve, "SLUICE_STREAM_RESERVE", 0, 4096, 64, gpu_backends,
                    "Idle vendor streams of each priority level that a device's stream pool "
                    "makes when the device is set up and keeps (IND-4; [Lifetime](#lifetime))."),
    integer_setting(setting::peer_sm_max_kib, "SLUICE_PEER_SM_MAX_KIB", 0, 1024 * 1024, -1,
                    gpu_backends,
                    "Sets `SLUICE_PEER_SM_PUSH_MAX_KIB` and `SLUICE_PEER_SM_PULL_MAX_KIB` where "
                    "they are unset.",
                    "unset"),
    integer_setting(setting::peer_sm_push_max_kib, "SLUICE_PEER_SM_PUSH_MAX_KIB", 0, 1024 * 1024, 0,
                    gpu_backends,
                    "The largest single `copy_peer` on the source device's stream (a push) that "
                    "runs as the SM copy kernel (`copy_path::direct_sm`); 0: never. `copy_peer` "
                    "reads it, `_PULL_MAX_KIB` and `_MAX_KIB` until all three are good: a bad "
                    "value makes it throw `errc::invalid_argument` before anything is enqueued.",
                    "CUDA 0, HIP 0"),
    integer_setting(setting::peer_sm_pull_max_kib, "SLUICE_PEER_SM_PULL_MAX_KIB", 0, 1024 * 1024, 0,
                    gpu_backends,
                    "The same for a `copy_peer` on the destination device's stream (a pull).",
                    "CUDA 16384, HIP 0"),
    integer_setting(setting::peer_sm_batch_max_kib, "SLUICE_PEER_SM_BATCH_MAX_KIB", 0, 1024 * 1024,
                    256, gpu_backends,
                    "The largest piece of a `copy_peer_batch` that the SM copy kernel moves; 0: "
                    "never. A bad value makes the first `copy_peer_batch` throw "
                    "`errc::invalid_argument`."),
    integer_setting(setting::peer_sm_strided_max_kib, "SLUICE_PEER_SM_STRIDED_MAX_KIB", 0,
                    1024 * 1024, 256, gpu_backends,
                    "The largest strided `copy_peer` over the link, or strided `copy` within one "
                    "device (more than one run, aligned), that the strided SM copy kernel "
                    "moves; 0: never. A bad value makes the first such copy throw "
                    "`errc::invalid_argument`.",
                    "CUDA 256, HIP 256"),
    integer_setting(setting::staging_chunk_kib, "SLUICE_STAGING_CHUNK_KIB", 4, 256 * 1024, 8 * 1024,
                    gpu_backends,
                    "The slot size of the staged peer-copy pipeline ([Peers](#peers)); a bad "
                    "value makes the first staged copy throw `errc::invalid_argument`, before "
                    "anything is enqueued."),
    other_setting(setting::cuda_batch_memop, "SLUICE_CUDA_BATCH_MEMOP", value_type::on_off, "on",
                  "`0`: off; any other value: on", cuda_backend,
                  "Off: a host function's signal and gate wait are two stream memory "
                  "operations even where the driver has `cuStreamBatchMemOp` (to compare, or "
                  "should a driver not keep the batch's order). Read once."),
    // --- sluice::comm
    integer_setting(setting::comm_timeout_s, "SLUICE_COMM_TIMEOUT_S", 1, 86400, 300, comm,
                    "Seconds an operation waits for its peer before it fails with "
                    "`errc::comm_failure` (COMM-7). Read when the engine starts."),
    integer_setting(setting::comm_ring_bytes, "SLUICE_COMM_RING_BYTES", 0, INT_MAX, 65536, comm,
                    "An `all_reduce` of at least this many bytes runs as sluice's ring (the "
                    "`mpi` engine; [Communication](#communication)). Read once."),
    integer_setting(setting::comm_small_bytes, "SLUICE_COMM_SMALL_BYTES", 0, INT_MAX, 4096, comm,
                    "Small collectives of at most this many bytes per rank run as sluice's "
                    "point-to-point messages (the `mpi` engine; 0: none; "
                    "[Communication](#communication)). Read once."),
    integer_setting(setting::comm_piece_bytes, "SLUICE_COMM_PIECE_BYTES", 0, 1 << 30, 0, comm,
                    "Messages of at least twice this many bytes go in pieces of this size (the "
                    "`mpi` engine). Rank 0's, read when a communicator is made; a bad value "
                    "makes it throw `errc::invalid_argument` on every rank.",
                    "4194304 on the GPU backends, 0 (none) on the host backend",
                    "0, or 4096..1073741824"),
    integer_setting(setting::comm_pieces_in_flight, "SLUICE_COMM_PIECES_IN_FLIGHT", 0, 1024, 0,
                    comm,
                    "How many pieces of one message are posted to MPI at once; 0: every piece "
                    "that can go. Rank 0's, read when a communicator is made, like "
                    "`SLUICE_COMM_PIECE_BYTES`."),
    integer_setting(setting::comm_nccl_lanes, "SLUICE_COMM_NCCL_LANES", 1, 16, 2,
                    "sluice::comm with NCCL",
                    "K: a communicator of the `nccl` engine is 3K NCCL communicators. Rank 0's, "
                    "read when a communicator is made; a bad value makes it throw "
                    "`errc::invalid_argument` on every rank."),
    // --- test-only
    other_setting(setting::test_mutation, "SLUICE_TEST_MUTATION", value_type::text, "unset",
                  "a mutation's name", "builds with `-DSLUICE_TEST_MUTATIONS=ON`",
                  "Test-only: the one guarantee that sluice breaks on purpose, to show that "
                  "the tests can fail ([conformance/mutations.md](conformance/mutations.md))."),
    // --- the `sluice` command
    other_setting(setting::backend, "SLUICE_BACKEND", value_type::choice,
                  "the first GPU backend built that has a device, else `host`",
                  "`host`, `cuda`, `hip`", "the `sluice` command",
                  "The backend the command runs; `--backend` wins ([tool.md](tool.md))."),
    // --- vendors' and launchers' variables that sluice reads
    integer_setting(setting::cuda_device_max_connections, "CUDA_DEVICE_MAX_CONNECTIONS", 1, 128, 8,
                    "sluice::cuda, sluice::hip on NVIDIA",
                    "CUDA's hardware queues per device. sluice sets 32 where it is unset, "
                    "before the runtime starts; read when a device is set up (IND-1).",
                    "32, set by sluice where unset (CUDA's own: 8)", nullptr, "CUDA"),
    integer_setting(setting::gpu_max_hw_queues, "GPU_MAX_HW_QUEUES", 1, 128, 4,
                    "sluice::hip on AMD",
                    "ROCm's hardware queues per device, read when a device is set up (IND-1).",
                    nullptr, nullptr, "ROCm"),
    other_setting(setting::cuda_module_loading, "CUDA_MODULE_LOADING", value_type::choice,
                  "CUDA's (`LAZY`)", "CUDA's", "sluice::cuda, sluice::hip on NVIDIA",
                  "sluice sets `EAGER` where it is unset, before the runtime starts.", "CUDA"),
    other_setting(setting::cuda_launch_blocking, "CUDA_LAUNCH_BLOCKING", value_type::on_off, "off",
                  "a non-zero integer: on", "sluice::cuda, sluice::hip on NVIDIA",
                  "On, kernel launches are serialized: evidence for `SLUICE_HOST_FUNC_PATH`'s "
                  "default (`signal`).",
                  "CUDA"),
    other_setting(setting::hip_launch_blocking, "HIP_LAUNCH_BLOCKING", value_type::on_off, "off",
                  "a non-zero integer: on", "sluice::hip on AMD",
                  "As `CUDA_LAUNCH_BLOCKING`, on HIP's AMD platform.", "HIP"),
    other_setting(setting::amd_serialize_kernel, "AMD_SERIALIZE_KERNEL", value_type::on_off, "off",
                  "a non-zero integer: on", "sluice::hip on AMD",
                  "As `CUDA_LAUNCH_BLOCKING`, on HIP's AMD platform.", "ROCm"),
    integer_setting(setting::ompi_comm_world_rank, "OMPI_COMM_WORLD_RANK", 0, INT_MAX, -1,
                    every_backend,
                    "The process's rank for `SLUICE_TRACE`'s file name, read when the backend "
                    "starts; the first of this, `PMIX_RANK`, `PMI_RANK`, `MV2_COMM_WORLD_RANK` "
                    "that holds one.",
                    "unset", launcher_range, "Open MPI"),
    integer_setting(setting::pmix_rank, "PMIX_RANK", 0, INT_MAX, -1, every_backend,
                    "As `OMPI_COMM_WORLD_RANK`.", "unset", launcher_range, "PMIx"),
    integer_setting(setting::pmi_rank, "PMI_RANK", 0, INT_MAX, -1, every_backend,
                    "As `OMPI_COMM_WORLD_RANK`.", "unset", launcher_range, "MPICH, Intel MPI"),
    integer_setting(setting::mv2_comm_world_rank, "MV2_COMM_WORLD_RANK", 0, INT_MAX, -1,
                    every_backend, "As `OMPI_COMM_WORLD_RANK`.", "unset", launcher_range,
                    "MVAPICH"),
    other_setting(setting::cuda_visible_devices, "CUDA_VISIBLE_DEVICES", value_type::text, "unset",
                  "CUDA's", "the `sluice` command",
                  "Named by `sluice info` where the backend sees no device.", "CUDA"),
    other_setting(setting::hip_visible_devices, "HIP_VISIBLE_DEVICES", value_type::text, "unset",
                  "HIP's", "the `sluice` command",
                  "Named by `sluice info` where the HIP backend sees no device.", "HIP"),
    other_setting(setting::rocr_visible_devices, "ROCR_VISIBLE_DEVICES", value_type::text, "unset",
                  "ROCm's", "the `sluice` command",
                  "Named by `sluice info` where the HIP backend sees no device.", "ROCm"),
    other_setting(setting::tmpdir, "TMPDIR", value_type::path, "`/tmp`", "a folder",
                  "the `sluice` command", "Where `sluice trace report` keeps its temporary file.",
                  "POSIX"),
};

static_assert(sizeof declarations / sizeof declarations[0] ==
                  static_cast<std::size_t>(setting::count),
              "one declaration per setting");

constexpr bool in_order() {
  for (std::size_t i = 0; i < sizeof declarations / sizeof declarations[0]; ++i)
    if (declarations[i].id != static_cast<setting>(i)) return false;
  return true;
}
static_assert(in_order(), "the declarations are in the order of `setting`");

const declaration& checked_integer(const char* name) {
  const declaration* d = find(name);
  if (d == nullptr || d->type != value_type::integer)
    fail(errc::invalid_argument, "sluice (environment)", name,
         " is not a declared integer setting");
  return *d;
}

//! The value, or null when unset or empty: what most of sluice's variables
//! treat alike.
const char* nonempty(setting s) noexcept {
  const char* v = value(s);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

}  // namespace

const declaration* begin() noexcept { return declarations; }
const declaration* end() noexcept {
  return declarations + sizeof declarations / sizeof declarations[0];
}

const declaration& declared(setting s) noexcept { return declarations[static_cast<int>(s)]; }

const declaration* find(std::string_view name) noexcept {
  for (const declaration& d : declarations)
    if (name == d.name) return &d;
  return nullptr;
}

const char* type_name(value_type t) noexcept {
  switch (t) {
    case value_type::integer: return "integer";
    case value_type::on_off: return "on/off";
    case value_type::text: return "text";
    case value_type::choice: return "choice";
    case value_type::path: return "path";
  }
  return "unknown";
}

const char* value(setting s) noexcept { return std::getenv(declared(s).name); }

const char* value(const char* name) {
  const declaration* d = find(name);
  if (d == nullptr)
    fail(errc::invalid_argument, "sluice (environment)", name, " is not a declared setting");
  return value(d->id);
}

int integer(setting s) { return integer(s, declared(s).fallback); }

int integer(setting s, int fallback) {
  const declaration& d = declared(s);
  return integer_from_environment(d.name, fallback, d.low, d.high);
}

int integer(const char* name, int fallback) {
  const declaration& d = checked_integer(name);
  return integer_from_environment(d.name, fallback, d.low, d.high);
}

int host_devices() { return integer(setting::host_devices); }
int host_slots(int hardware_threads) { return integer(setting::host_slots, hardware_threads); }
int host_chaos() { return integer(setting::host_chaos); }

bool diagnose() noexcept {
  const char* v = value(setting::diagnose);
  return v != nullptr && *v != '\0' && !(v[0] == '0' && v[1] == '\0');
}

std::string trace_path() {
  const char* v = nonempty(setting::trace);
  return v != nullptr ? v : "";
}

trace_source_choice trace_source() {
  const char* v = value(setting::trace_source);
  const std::string asked = v != nullptr ? v : "";
  if (asked.empty()) return trace_source_choice::unset;
  if (asked == "events") return trace_source_choice::events;
  if (asked == "cupti") return trace_source_choice::cupti;
  fail(errc::invalid_argument, "sluice::trace_begin", "SLUICE_TRACE_SOURCE=", asked,
       " is neither \"events\" nor \"cupti\"");
}

std::optional<bool> trace_counter() noexcept {
  const char* v = nonempty(setting::trace_counter);
  if (v == nullptr) return std::nullopt;
  return std::strcmp(v, "0") != 0;
}

std::string cupti_library() {
  const char* v = nonempty(setting::cupti_library);
  return v != nullptr ? v : "";
}

std::size_t cupti_buffers(std::size_t fallback) noexcept {
  const char* v = nonempty(setting::cupti_buffers);
  if (v == nullptr) return fallback;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return end != v && *end == '\0' ? static_cast<std::size_t>(n) : fallback;
}

cupti_correlation_choice cupti_correlation() noexcept {
  const char* v = value(setting::cupti_correlation);
  if (v != nullptr && std::strcmp(v, "external") == 0) return cupti_correlation_choice::external;
  if (v != nullptr && std::strcmp(v, "none") == 0) return cupti_correlation_choice::none;
  return cupti_correlation_choice::callbacks;
}

const char* host_func_path() noexcept { return value(setting::host_func_path); }

int stream_reserve(int fallback) { return integer(setting::stream_reserve, fallback); }
int peer_sm_max_kib() { return integer(setting::peer_sm_max_kib); }
int peer_sm_push_max_kib(int fallback) { return integer(setting::peer_sm_push_max_kib, fallback); }
int peer_sm_pull_max_kib(int fallback) { return integer(setting::peer_sm_pull_max_kib, fallback); }
int peer_sm_batch_max_kib(int fallback) {
  return integer(setting::peer_sm_batch_max_kib, fallback);
}
int peer_sm_strided_max_kib(int fallback) {
  return integer(setting::peer_sm_strided_max_kib, fallback);
}
int staging_chunk_kib() { return integer(setting::staging_chunk_kib); }

bool cuda_batch_memop() noexcept {
  const char* v = value(setting::cuda_batch_memop);
  return v == nullptr || std::strcmp(v, "0") != 0;
}

int comm_timeout_s() { return integer(setting::comm_timeout_s); }
int comm_ring_bytes() { return integer(setting::comm_ring_bytes); }
int comm_small_bytes() { return integer(setting::comm_small_bytes); }
int comm_piece_bytes(int fallback) { return integer(setting::comm_piece_bytes, fallback); }
int comm_pieces_in_flight() { return integer(setting::comm_pieces_in_flight); }
int comm_nccl_lanes() { return integer(setting::comm_nccl_lanes); }

std::string test_mutation() {
  const char* v = nonempty(setting::test_mutation);
  return v != nullptr ? v : "";
}

std::string command_backend() {
  const char* v = nonempty(setting::backend);
  return v != nullptr ? v : "";
}

}  // namespace sluice::detail::settings
