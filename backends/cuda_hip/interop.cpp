// What include/sluice/detail/interop.hpp asks of the GPU backend for
// sluice::comm and sluice::kokkos: foreign operations in traces, where memory
// lives, failures reported on a stream; and for the probes, the staged
// pipeline and the SM batch kernel. The host-function counts and path:
// host_func/.
#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "peer_copy.hpp"
#include "range_map.hpp"
#include "sm_copy.hpp"
#include "stream_state.hpp"
#include "vendor.hpp"

#include <sluice/detail/interop.hpp>
#include <sluice/native.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

namespace sluice::detail {

//! A foreign operation on the GPU backends: a traced operation around the
//! other library's vendor call (timing events before and after it).
struct foreign_op {
  foreign_op(stream_state& s, const char* kind) : scope(s, kind) {}
  enqueue_scope<keep_device> scope;
};

int device_memory_of(const void* p) noexcept {
  // sluice's own allocations from its map (a per-thread cache, no vendor
  // call: sluice::comm asks twice per operation); other memory from the vendor.
  if (const range_lookup r = allocations().find(p, 1); r.owner != nullptr) return r.device;
  int device = -1;
  if (!gpu::api::device_memory_of(p, &device).ok()) {
    gpu::api::clear_last_error();
    return -1;
  }
  return device;
}

// Work enqueued on the native handle (a kernel) is not seen here.
std::uint64_t enqueued_count(stream_ref) noexcept { return unknown_count; }
void report_stream_failure(stream_ref s, errc code, std::string message) {
  auto& st = checked_handle(s, "sluice::detail::report_stream_failure");
  st.failures.add(code, std::move(message));
}

foreign_op* begin_foreign_op(stream_ref s, const char* kind, const char* label) {
  if (!trace::enabled()) return nullptr;
  auto& st = checked(s, "sluice::detail::begin_foreign_op");
  auto op = std::make_unique<foreign_op>(st, kind);
  op->scope.label(label);
  return op.release();
}

void end_foreign_op(foreign_op* op) noexcept {
  if (op == nullptr) return;
  try {
    op->scope.done();
  } catch (...) {  // the trace misses this operation; the work itself was enqueued
  }
  delete op;
}

void staged_copy_for_probe(stream_ref s, int dst_dev, int src_dev, const peer_piece* pieces,
                           std::size_t count) {
  constexpr const char* api_name = "sluice::detail::staged_copy_for_probe";
  staged_copy(checked(s, api_name), dst_dev, src_dev, pieces, count, api_name);
}

sm_batch_kernel_shape sm_batch_kernel_for_probe(stream_ref s) {
  sm_batch_kernel_shape shape;
  shape.threads = sm_copy::threads;
  shape.alignment = sm_copy::alignment;
  shape.batch_pieces = sm_copy::batch_pieces;
  shape.kernels_launch = sm_copy::launch(nullptr, nullptr, 0, sluice::native_handle(s), 1) == 0;
  return shape;
}

int launch_sm_batch_for_probe(stream_ref s, const peer_piece* pieces, unsigned count,
                              unsigned blocks_per_piece) {
  constexpr const char* api_name = "sluice::detail::launch_sm_batch_for_probe";
  // The pieces travel by value as the kernel's parameter: one launch's at most.
  if (count > sm_copy::batch_pieces)
    fail(errc::invalid_argument, api_name, count, " pieces: at most ", sm_copy::batch_pieces,
         " per launch");
  sm_copy::piece batch[sm_copy::batch_pieces]{};
  for (unsigned i = 0; i < count; ++i) batch[i] = {pieces[i].dst, pieces[i].src, pieces[i].bytes};
  return sm_copy::launch_batch(batch, count, sluice::native_handle(s), blocks_per_piece);
}

}  // namespace sluice::detail
