// sluice/detail/interop.hpp: what interoperation modules (sluice::kokkos) need
// from the backend beyond the public API. Not part of the public API.
#pragma once

#include <sluice/stream.hpp>

namespace sluice::detail {

//! Work that someone else enqueues on a stream's native stream (a Kokkos
//! kernel), shown on the stream's track while a trace is collected.
struct foreign_op;

//! Call before the work is enqueued; null (and nothing done) while no trace is
//! collected. `kind` must outlive the trace ("kernel"); `label` is copied.
foreign_op* begin_foreign_op(stream_ref s, const char* kind, const char* label);
//! Call after the work is enqueued (GPU backends: the vendor call returned;
//! host backend: the work ran); gives op back. Null: nothing.
void end_foreign_op(foreign_op* op) noexcept;

}  // namespace sluice::detail
