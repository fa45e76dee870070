// Every environment variable sluice reads, declared once. Internal.
//
// settings.cpp holds one declaration per variable (name, whose it is, type,
// default, range or choices, the build it exists in, what it does); the
// reference's table (docs/api.md "Settings") is printed from those
// declarations and a test compares the two. sluice's code reads the
// environment only through the accessors below: a test
// (tests/unit/environment_reads.cpp) fails on a getenv, secure_getenv,
// environ or integer_from_environment elsewhere in include/, src/, backends/
// or tools/. The vendors' and launchers' variables that sluice reads on
// purpose (CUDA_LAUNCH_BLOCKING, OMPI_COMM_WORLD_RANK, ...) are declared too,
// so that the rule has no exceptions.
//
// The accessors read the environment at each call: a caller that reads a
// value once keeps it (a static), as it says where it does.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace sluice::detail {

//! One environment variable (settings.cpp declares each).
enum class setting {
  // the host backend
  host_devices,  // SLUICE_HOST_DEVICES
  host_slots,    // SLUICE_HOST_SLOTS
  host_chaos,    // SLUICE_HOST_CHAOS
  // every backend
  diagnose,  // SLUICE_DIAGNOSE
  trace,     // SLUICE_TRACE
  // the GPU backends
  trace_source,             // SLUICE_TRACE_SOURCE
  trace_counter,            // SLUICE_TRACE_COUNTER
  cupti_library,            // SLUICE_CUPTI_LIBRARY
  cupti_buffers,            // SLUICE_CUPTI_BUFFERS
  cupti_correlation,        // SLUICE_CUPTI_CORRELATION
  host_func_path,           // SLUICE_HOST_FUNC_PATH
  stream_reserve,           // SLUICE_STREAM_RESERVE
  peer_sm_max_kib,          // SLUICE_PEER_SM_MAX_KIB
  peer_sm_push_max_kib,     // SLUICE_PEER_SM_PUSH_MAX_KIB
  peer_sm_pull_max_kib,     // SLUICE_PEER_SM_PULL_MAX_KIB
  peer_sm_batch_max_kib,    // SLUICE_PEER_SM_BATCH_MAX_KIB
  peer_sm_strided_max_kib,  // SLUICE_PEER_SM_STRIDED_MAX_KIB
  staging_chunk_kib,        // SLUICE_STAGING_CHUNK_KIB
  cuda_batch_memop,         // SLUICE_CUDA_BATCH_MEMOP
  // sluice::comm
  comm_timeout_s,         // SLUICE_COMM_TIMEOUT_S
  comm_ring_bytes,        // SLUICE_COMM_RING_BYTES
  comm_small_bytes,       // SLUICE_COMM_SMALL_BYTES
  comm_piece_bytes,       // SLUICE_COMM_PIECE_BYTES
  comm_pieces_in_flight,  // SLUICE_COMM_PIECES_IN_FLIGHT
  comm_nccl_lanes,        // SLUICE_COMM_NCCL_LANES
  // test-only
  test_mutation,  // SLUICE_TEST_MUTATION
  // the `sluice` command
  backend,  // SLUICE_BACKEND
  // vendors' and launchers' variables that sluice reads
  cuda_device_max_connections,  // CUDA_DEVICE_MAX_CONNECTIONS
  gpu_max_hw_queues,            // GPU_MAX_HW_QUEUES
  cuda_module_loading,          // CUDA_MODULE_LOADING
  cuda_launch_blocking,         // CUDA_LAUNCH_BLOCKING
  hip_launch_blocking,          // HIP_LAUNCH_BLOCKING
  amd_serialize_kernel,         // AMD_SERIALIZE_KERNEL
  ompi_comm_world_rank,         // OMPI_COMM_WORLD_RANK
  pmix_rank,                    // PMIX_RANK
  pmi_rank,                     // PMI_RANK
  mv2_comm_world_rank,          // MV2_COMM_WORLD_RANK
  cuda_visible_devices,         // CUDA_VISIBLE_DEVICES
  hip_visible_devices,          // HIP_VISIBLE_DEVICES
  rocr_visible_devices,         // ROCR_VISIBLE_DEVICES
  tmpdir,                       // TMPDIR
  count
};

namespace settings {

//! What a variable's value is.
enum class value_type {
  integer,  // a decimal integer in [low, high]
  on_off,   // a switch
  text,     // free text
  choice,   // one of the declared choices
  path      // a file or folder
};

//! One variable, as settings.cpp declares it and the reference shows it.
struct declaration {
  setting id;
  const char* name;  // the environment variable
  const char* of;    // whose variable it is: "sluice", "CUDA", "HIP", "Open MPI", ...
  value_type type;
  int low;                    // integer: the smallest value allowed
  int high;                   // integer: the largest value allowed
  int fallback;               // integer: the default, where `shown_default` is null
  const char* shown_default;  // the default in words; null: `fallback`
  const char* shown_range;    // the range or choices in words; null: low..high
  const char* exists_in;      // the build or program that reads it
  const char* what;           // what it does, and when it is read
};

//! Every declaration, in the order of `setting`.
const declaration* begin() noexcept;
const declaration* end() noexcept;

//! The declaration of `s`.
const declaration& declared(setting s) noexcept;

//! The declaration named `name`; null where no declaration has that name.
const declaration* find(std::string_view name) noexcept;

//! The type's name as the reference shows it ("integer", "on/off", ...).
const char* type_name(value_type t) noexcept;

// --- reading -----------------------------------------------------------------------

//! The variable's text as the environment holds it; null when unset (an
//! empty value is "" here: callers that treat it as unset say so).
const char* value(setting s) noexcept;
//! The same for a declared variable named at run time (a vendor's variable
//! that the traits name); errc::invalid_argument for a name not declared.
const char* value(const char* name);

//! integer_from_environment with the declared range and default: the value,
//! or the default when unset or empty; errc::invalid_argument naming the
//! variable, its value and the range otherwise.
int integer(setting s);
//! The same with a default known only at run time (the declaration says
//! what it is: hardware threads, the traits' value, ...).
int integer(setting s, int fallback);
//! The same for a declared integer variable named at run time.
int integer(const char* name, int fallback);

// --- typed accessors, one per variable of sluice's own ------------------------------
// Each parses as its call site always did; which value "unset" means, and
// whether a bad value throws or falls back, is the declaration's.

//! SLUICE_HOST_DEVICES: 1..64, default 2.
int host_devices();
//! SLUICE_HOST_SLOTS: 1..256, default `hardware_threads`.
int host_slots(int hardware_threads);
//! SLUICE_HOST_CHAOS: the seed, 0 (off) .. 2^31-1.
int host_chaos();
//! SLUICE_DIAGNOSE: on when set to anything but "" and "0".
bool diagnose() noexcept;
//! SLUICE_TRACE: the trace's path; empty when unset or empty.
std::string trace_path();

//! SLUICE_TRACE_SOURCE, read at each trace_begin.
enum class trace_source_choice { unset, events, cupti };
//! errc::invalid_argument from sluice::trace_begin for another value.
trace_source_choice trace_source();
//! SLUICE_TRACE_COUNTER: true for a value other than "0", false for "0";
//! nothing when unset or empty (the clocksource decides).
std::optional<bool> trace_counter() noexcept;
//! SLUICE_CUPTI_LIBRARY: the library to load; empty when unset or empty.
std::string cupti_library();
//! SLUICE_CUPTI_BUFFERS: a decimal count (strtoull), `fallback` when unset,
//! empty or not a number.
std::size_t cupti_buffers(std::size_t fallback) noexcept;
//! SLUICE_CUPTI_CORRELATION: "external", "none"; anything else (unset too):
//! callbacks.
enum class cupti_correlation_choice { callbacks, external, none };
cupti_correlation_choice cupti_correlation() noexcept;
//! SLUICE_HOST_FUNC_PATH: the path asked for, null when unset (the GPU
//! backend's choice, backends/cuda_hip/host_func/host_path.cpp, checks it).
const char* host_func_path() noexcept;
//! SLUICE_STREAM_RESERVE: 0..4096, default `fallback` (the traits').
int stream_reserve(int fallback);
//! SLUICE_PEER_SM_MAX_KIB: 0..1048576, -1 when unset or empty.
int peer_sm_max_kib();
//! SLUICE_PEER_SM_PUSH_MAX_KIB, _PULL_MAX_KIB, _BATCH_MAX_KIB: 0..1048576,
//! default `fallback`.
int peer_sm_push_max_kib(int fallback);
int peer_sm_pull_max_kib(int fallback);
int peer_sm_batch_max_kib(int fallback);
//! SLUICE_PEER_SM_STRIDED_MAX_KIB: 0..1048576; `fallback` when unset (the traits' default).
int peer_sm_strided_max_kib(int fallback);
//! SLUICE_STAGING_CHUNK_KIB: 4..262144, default 8192.
int staging_chunk_kib();
//! SLUICE_CUDA_BATCH_MEMOP: false only for "0".
bool cuda_batch_memop() noexcept;

//! SLUICE_COMM_TIMEOUT_S: 1..86400, default 300.
int comm_timeout_s();
//! SLUICE_COMM_RING_BYTES: 0..INT_MAX, default 65536.
int comm_ring_bytes();
//! SLUICE_COMM_SMALL_BYTES: 0..INT_MAX, default 4096.
int comm_small_bytes();
//! SLUICE_COMM_PIECE_BYTES: 0..2^30, default `fallback` (by backend); the
//! values 1..4095 are the caller's to reject.
int comm_piece_bytes(int fallback);
//! SLUICE_COMM_PIECES_IN_FLIGHT: 0..1024, default 0.
int comm_pieces_in_flight();
//! SLUICE_COMM_NCCL_LANES: 1..16, default 2.
int comm_nccl_lanes();

//! SLUICE_TEST_MUTATION: the guarantee a test-only mutation breaks; empty
//! when unset or empty. Read only by builds with -DSLUICE_TEST_MUTATIONS=ON.
std::string test_mutation();

//! SLUICE_BACKEND: the backend the `sluice` command runs; empty when unset
//! or empty (the command checks the name).
std::string command_backend();

}  // namespace settings
}  // namespace sluice::detail
