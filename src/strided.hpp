// Strided copies and registered host memory, backend-neutral (internal): the
// checks of a strided copy (MEM-7: before anything is enqueued), its normalized
// shape, and the registry of registered_host_memory ranges that decides whether
// an end counts as pinned (MEM-8). A backend calls plan_strided_copy (or the
// strided plan_copy_peer / plan_copy_peer_batch of peer_plan.hpp) and carries
// out what it returns; nothing here calls back into the backend.
#pragma once

#include "range_map.hpp"

#include <sluice/memory.hpp>

#include <cstddef>
#include <cstdint>

namespace sluice::detail {

//! One end of a checked strided copy, as the shape was normalized.
struct strided_end {
  const unsigned char* first = nullptr;  //!< the first byte
  std::uintptr_t address = 0;            //!< its address, for arithmetic
  std::size_t row_step = 0;              //!< bytes from one run to the next (rows > 1)
  std::size_t plane_step = 0;            //!< bytes from one plane to the next (planes > 1)
  std::size_t footprint = 0;             //!< bytes from the first to one past the last byte touched
  std::size_t pitch = 0;                 //!< as given (0 where height == depth == 1)
  std::size_t rows_per_plane = 0;        //!< as given (0 where depth == 1)
  range_lookup memory;                   //!< the range map's answer for the footprint
  bool registered = false;               //!< the footprint lies wholly inside one registered range
  //! Neither sluice memory nor wholly inside a registration: MEM-3's blocking rules.
  bool pageable() const noexcept { return memory.owner == nullptr && !registered; }
};

//! A checked strided copy: `planes` planes of `rows` runs of `width` contiguous
//! bytes. Normalized: rows that touch (step == width on both ends) are one run,
//! planes that continue the rows (plane step == rows * row step on both ends)
//! are more rows, counts of 1 have step 0. So a copy of whole rows is one run
//! (contiguous()), a 3-D copy of whole planes is 2-D. Empty: a zero extent.
struct strided_plan {
  std::size_t width = 0;
  std::size_t rows = 0;
  std::size_t planes = 0;
  std::size_t bytes = 0;  //!< width * rows * planes: the bytes moved
  strided_end dst, src;
  bool empty() const noexcept { return bytes == 0; }
  bool contiguous() const noexcept { return rows == 1 && planes == 1; }
  //! The destination's first byte came as a non-const pointer (pitched_ptr).
  unsigned char* dst_at(std::size_t row, std::size_t plane) const noexcept {
    return const_cast<unsigned char*>(dst.first) + plane * dst.plane_step + row * dst.row_step;
  }
  const unsigned char* src_at(std::size_t row, std::size_t plane) const noexcept {
    return src.first + plane * src.plane_step + row * src.row_step;
  }
};

//! The checks of copy(s, dst, src, e) and its plan: a zero extent returns an
//! empty plan (no other check: a no-op whatever the pointers); else
//! errc::invalid_argument, naming `api`, for a null pointer, a pitch below the
//! width (height > 1 or depth > 1), rows_per_plane below the height (depth > 1),
//! a footprint that overflows the size type or the address space, overlapping
//! footprints (unless strided_overlap_allowed), and a footprint that runs past
//! the end of a sluice allocation. Which device each end belongs to is the
//! caller's check (copy: check_copy_devices; copy_peer: its own).
strided_plan plan_strided_copy(pitched_ptr dst, const_pitched_ptr src, extent e, const char* api);

//! The footprint in bytes of extent e at pitch and rows_per_plane (e non-zero,
//! pitch and rows_per_plane already checked); errc::invalid_argument naming
//! `api` and `what` when it overflows std::size_t.
std::size_t strided_footprint(extent e, std::size_t pitch, std::size_t rows_per_plane,
                              const char* api, const char* what);

//! Two checked ends whose footprints meet may still touch disjoint bytes: the
//! same pitch and rows_per_plane (where a depth > 1 makes it count), each end
//! more than one row, and column ranges (address modulo the pitch, the width of
//! its extent wide) that do not meet: a ghost column copied inside one array.
bool strided_overlap_allowed(const strided_end& a, extent ea, const strided_end& b,
                             extent eb) noexcept;

//! Whether the destination (`dst_of_a`) or source end of plan a and an end of
//! plan b touch a byte in common, exactly (not by footprint): the bytes of
//! two pieces of a batch, which run in no particular order.
bool share_bytes(const strided_plan& a, bool dst_of_a, const strided_plan& b,
                 bool dst_of_b) noexcept;

// --- registered host memory ----------------------------------------------

//! The process's registered_host_memory ranges (owner: the backend's
//! registration, device -1). Never destroyed, as allocations().
range_map& registrations();

//! Enters [p, p + bytes) as owned by `owner`: errc::invalid_argument, naming
//! `api`, for a null p, zero bytes, a range past the end of the address space,
//! or one that meets another registration or a sluice allocation. Atomic
//! against concurrent registrations.
void add_registration(void* p, std::size_t bytes, const void* owner, const char* api);

//! Removes the registration starting at p (no-op when there is none).
void remove_registration(const void* p) noexcept;

//! Whether [p, p + bytes) lies wholly inside one registered range (bytes > 0).
inline bool inside_registration(const void* p, std::size_t bytes) noexcept {
  const range_lookup l = registrations().find(p, bytes);
  return l.owner != nullptr && !l.overrun;
}

//! How many bytes of [p, p + bytes) (bytes > 0) lie in the registration p starts in, when the
//! range runs past its end; else bytes (wholly inside one, or starting outside every one). The
//! vendor takes a pointer inside a registration as that registration and refuses a range past
//! its end (CUDA: cudaErrorInvalidValue, on an H200), so a backend splits a copy there.
inline std::size_t registered_run(const void* p, std::size_t bytes) noexcept {
  const range_lookup l = registrations().find(p, bytes);
  return l.owner != nullptr && l.overrun ? static_cast<std::size_t>(l.size - l.offset) : bytes;
}

}  // namespace sluice::detail
