// What include/sluice/detail/interop.hpp asks of the GPU backend for
// sluice::comm and sluice::kokkos: foreign operations in traces, where memory
// lives, failures reported on a stream. The host-function counts and path:
// host_func/.
#include "engine.hpp"
#include "enqueue_scope.hpp"
#include "range_map.hpp"
#include "stream_state.hpp"
#include "vendor.hpp"

#include <sluice/detail/interop.hpp>

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
  auto& st = checked(s, "sluice::detail::report_stream_failure");
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

}  // namespace sluice::detail
