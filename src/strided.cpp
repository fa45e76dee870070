#include "strided.hpp"

#include "checks.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>

namespace sluice::detail {

namespace {

bool multiply(std::size_t a, std::size_t b, std::size_t* out) noexcept {
  return !__builtin_mul_overflow(a, b, out);
}

bool add(std::size_t a, std::size_t b, std::size_t* out) noexcept {
  return !__builtin_add_overflow(a, b, out);
}

//! a * b == c without overflow (an overflowing product equals nothing in range).
bool product_is(std::size_t a, std::size_t b, std::size_t c) noexcept {
  std::size_t p = 0;
  return multiply(a, b, &p) && p == c;
}

//! One end's checks: its pointer, pitch, rows_per_plane, footprint.
strided_end checked_end(const void* ptr, std::size_t pitch, std::size_t rows_per_plane, extent e,
                        const char* api, const char* what) {
  if (ptr == nullptr)
    fail(errc::invalid_argument, api, what, " is null but the extent is ", e.width_bytes, " x ",
         e.height, " x ", e.depth);
  const bool rows_count = e.height > 1 || e.depth > 1;
  if (rows_count && pitch < e.width_bytes)
    fail(errc::invalid_argument, api, what, "'s pitch ", pitch, " is below the width of ",
         e.width_bytes, " bytes");
  if (e.depth > 1 && rows_per_plane < e.height)
    fail(errc::invalid_argument, api, what, "'s rows_per_plane ", rows_per_plane,
         " is below the height of ", e.height, " rows");
  strided_end end;
  end.first = static_cast<const unsigned char*>(ptr);
  end.address = reinterpret_cast<std::uintptr_t>(ptr);
  end.pitch = rows_count ? pitch : 0;
  end.rows_per_plane = e.depth > 1 ? rows_per_plane : 0;
  end.row_step = end.pitch;
  if (e.depth > 1) (void)multiply(pitch, rows_per_plane, &end.plane_step);  // checked below
  end.footprint = strided_footprint(e, pitch, rows_per_plane, api, what);
  if (end.footprint - 1 > std::numeric_limits<std::uintptr_t>::max() - end.address)
    fail(errc::invalid_argument, api, what, " + its footprint of ", end.footprint,
         " bytes overflows the address space");
  return end;
}

//! The range map's and the registry's answer for one end's footprint.
void look_up(strided_end& end, const range_lookup& l, const char* api, const char* what) {
  check_no_overrun(l, end.footprint, api, what);
  end.memory = l;
  if (l.owner == nullptr) end.registered = inside_registration(end.first, end.footprint);
}

}  // namespace

std::size_t strided_footprint(extent e, std::size_t pitch, std::size_t rows_per_plane,
                              const char* api, const char* what) {
  std::size_t bytes = e.width_bytes;
  std::size_t rows = 0, plane = 0, planes = 0;
  bool ok = true;
  if (e.height > 1) ok = multiply(e.height - 1, pitch, &rows) && add(bytes, rows, &bytes);
  if (ok && e.depth > 1)
    ok = multiply(pitch, rows_per_plane, &plane) && multiply(e.depth - 1, plane, &planes) &&
         add(bytes, planes, &bytes);
  if (!ok)
    fail(errc::invalid_argument, api, what, "'s footprint (", e.width_bytes, " x ", e.height, " x ",
         e.depth, " at pitch ", pitch, ", ", rows_per_plane,
         " rows per plane) overflows std::size_t");
  return bytes;
}

bool strided_overlap_allowed(const strided_end& a, extent ea, const strided_end& b,
                             extent eb) noexcept {
  // A single row has no columns: footprints that meet share bytes.
  if (a.pitch == 0 || a.pitch != b.pitch) return false;
  if ((ea.depth > 1 || eb.depth > 1) && a.rows_per_plane != b.rows_per_plane) return false;
  // Every step is a multiple of the pitch, so a byte's column is its address
  // modulo the pitch: [ca, ca + wa) and [cb, cb + wb) on a circle of that size.
  const std::size_t p = a.pitch;
  const std::size_t from_a = (b.address % p + p - a.address % p) % p;  // cb - ca, mod p
  return from_a >= ea.width_bytes && p - from_a >= eb.width_bytes;
}

namespace {

//! One end's bytes, as normalized: `planes` planes of `rows` runs of `width`.
struct run_set {
  std::uintptr_t address;
  std::size_t width, rows, row_step, planes, plane_step;
  std::size_t runs() const noexcept { return rows * planes; }
  std::size_t plane_span() const noexcept { return (rows - 1) * row_step + width; }
};

run_set runs_of(const strided_plan& p, bool dst) noexcept {
  const strided_end& e = dst ? p.dst : p.src;
  return {e.address, p.width, p.rows, e.row_step, p.planes, e.plane_step};
}

//! [first, last] of the `count` intervals [base + i * step, + length) that meet
//! [s, e) (none: first > last). The intervals do not overlap (step >= length).
void meeting(std::uintptr_t base, std::size_t step, std::size_t length, std::size_t count,
             std::uintptr_t s, std::uintptr_t e, std::size_t* first, std::size_t* last) noexcept {
  *first = 1;
  *last = 0;
  if (e <= base) return;
  if (count == 1 || step == 0) {
    if (base + length > s) *first = *last = 0;
    return;
  }
  const std::size_t lo = s < base + length ? 0 : (s - base - length) / step + 1;
  const std::size_t hi = std::min<std::size_t>(count - 1, (e - 1 - base) / step);
  *first = lo;
  *last = hi;
}

//! Whether [s, e) meets a byte of b.
bool run_meets(const run_set& b, std::uintptr_t s, std::uintptr_t e) noexcept {
  std::size_t z0 = 0, z1 = 0;
  meeting(b.address, b.plane_step, b.plane_span(), b.planes, s, e, &z0, &z1);
  if (z0 > z1) return false;
  if (z1 - z0 >= 2) return true;  // a whole plane lies inside [s, e)
  for (std::size_t z = z0; z <= z1; ++z) {
    std::size_t y0 = 0, y1 = 0;
    meeting(b.address + z * b.plane_step, b.row_step, b.width, b.rows, s, e, &y0, &y1);
    if (y0 <= y1) return true;
  }
  return false;
}

}  // namespace

bool share_bytes(const strided_plan& pa, bool dst_of_a, const strided_plan& pb,
                 bool dst_of_b) noexcept {
  run_set a = runs_of(pa, dst_of_a), b = runs_of(pb, dst_of_b);
  if (a.runs() > b.runs()) std::swap(a, b);  // walk the end with fewer runs
  for (std::size_t z = 0; z < a.planes; ++z)
    for (std::size_t y = 0; y < a.rows; ++y) {
      const std::uintptr_t s = a.address + z * a.plane_step + y * a.row_step;
      if (run_meets(b, s, s + a.width)) return true;
    }
  return false;
}

strided_plan plan_strided_copy(pitched_ptr dst, const_pitched_ptr src, extent e, const char* api) {
  strided_plan plan;
  if (e.width_bytes == 0 || e.height == 0 || e.depth == 0) return plan;
  plan.dst = checked_end(dst.ptr, dst.pitch, dst.rows_per_plane, e, api, "dst");
  plan.src = checked_end(src.ptr, src.pitch, src.rows_per_plane, e, api, "src");
  const std::uintptr_t d = plan.dst.address, s = plan.src.address;
  const bool meet = d - s < plan.src.footprint || s - d < plan.dst.footprint;
  if (meet && !strided_overlap_allowed(plan.dst, e, plan.src, e))
    fail(errc::invalid_argument, api, "the footprints of source and destination overlap (",
         "allowed only with the same pitch and rows_per_plane and disjoint columns)");
  look_up(plan.dst, allocations().find(plan.dst.first, plan.dst.footprint), api, "dst");
  look_up(plan.src, allocations().find(plan.src.first, plan.src.footprint), api, "src");

  // Normalize: rows of width bytes, then planes; a count of 1 has no step.
  struct dimension {
    std::size_t count, dst_step, src_step;
  };
  dimension dims[2] = {};
  int n = 0;
  if (e.height > 1) dims[n++] = {e.height, plan.dst.row_step, plan.src.row_step};
  if (e.depth > 1) dims[n++] = {e.depth, plan.dst.plane_step, plan.src.plane_step};
  std::size_t width = e.width_bytes;
  // Runs that touch on both ends are one run (width * count <= footprint: no overflow).
  while (n > 0 && dims[0].dst_step == width && dims[0].src_step == width) {
    width *= dims[0].count;
    dims[0] = dims[1];
    --n;
  }
  // Planes that continue the rows on both ends are more rows.
  if (n == 2 && product_is(dims[0].count, dims[0].dst_step, dims[1].dst_step) &&
      product_is(dims[0].count, dims[0].src_step, dims[1].src_step)) {
    dims[0].count *= dims[1].count;
    n = 1;
  }
  plan.width = width;
  plan.rows = n > 0 ? dims[0].count : 1;
  plan.planes = n > 1 ? dims[1].count : 1;
  plan.dst.row_step = n > 0 ? dims[0].dst_step : 0;
  plan.src.row_step = n > 0 ? dims[0].src_step : 0;
  plan.dst.plane_step = n > 1 ? dims[1].dst_step : 0;
  plan.src.plane_step = n > 1 ? dims[1].src_step : 0;
  plan.bytes = width * plan.rows * plan.planes;
  return plan;
}

range_map& registrations() {
  static auto* map = new range_map();
  return *map;
}

void add_registration(void* p, std::size_t bytes, const void* owner, const char* api) {
  if (p == nullptr) fail(errc::invalid_argument, api, "the pointer is null");
  if (bytes == 0) fail(errc::invalid_argument, api, "the range is empty (0 bytes)");
  check_pointer_range(p, bytes, api, "the range");
  if (allocations().meets(p, bytes))
    fail(errc::invalid_argument, api, "the range of ", bytes,
         " bytes overlaps memory sluice allocated (a pinned_buffer or device_buffer)");
  if (!registrations().add_if_disjoint(p, bytes, owner, -1))
    fail(errc::invalid_argument, api, "the range of ", bytes,
         " bytes overlaps another registered_host_memory");
}

void remove_registration(const void* p) noexcept { registrations().remove(p); }

}  // namespace sluice::detail
