// The staged peer copy: sluice's own pipeline through pinned host memory for
// devices without peer access, instead of the vendor's staged copy.
//
// A copy from device S to device D moves in chunks through a ring of pinned
// slots. Chunk i: the stream on S copies it into slot i % slots (device to
// host) and records filled[k]; the stream on D waits for filled[k], copies the
// slot into place (host to device) and records drained[k]; before slot k is
// filled again, the stream on S waits for drained[k]. So the copy engines of
// both devices run at once, one chunk apart (the vendor's staged copy ran at
// ~37 GB/s on 2x H200 where such a pipeline reached 53:
// docs/results/runs/2026-11-22-raw-cuda-reference-2xh200.md).
//
// One of the two streams is the caller's; the other is a helper stream of the
// set, on the other device, with the caller's priority. The copy stays one
// operation of the caller's stream:
// - the caller's stream is on S: every step on D waits for a filled[k] recorded
//   on the caller's stream after its earlier work; at the end the caller's
//   stream waits for the last drained[k] (D runs in order: all of them);
// - the caller's stream is on D: the helper on S first waits for a start event
//   recorded on the caller's stream; the caller's stream does the last step.
// Nothing waits on the host; no other stream is involved. A strided copy
// moves bands of whole rows the same way, each band by one 2-D copy into the
// slot (packed) and one out of it.
//
// Sets are remembered by the stream that used them (its next staged copy of
// the same devices reuses them, ordered by the events above), and go to the
// engine's pool when the stream is recycled; another stream takes one from
// the pool only once its last use has completed (its `done` event), so no
// stream ever waits for another's staged copy. Sets are never freed (like
// stream states): a set is 4 x 8 MiB of pinned memory, a helper stream and
// 2 x 4 + 2 events, one per stream and direction that staged a copy.
#include "engine.hpp"
#include "peer_copy.hpp"
#include "settings.hpp"
#include "stream_state.hpp"

#include <algorithm>
#include <array>

namespace sluice::detail {

namespace {

constexpr std::size_t slots = 4;

//! Bytes per slot: 8 MiB (a pipeline of 4 x 8 MiB reached 53 GB/s on 2x H200,
//! docs/results/runs/2026-11-22-raw-cuda-reference-2xh200.md), or SLUICE_STAGING_CHUNK_KIB (4 ..
//! 262144) for tuning, and for tests that need many chunks per copy.
std::size_t chunk_bytes() {
  static const std::size_t bytes =
      std::size_t{1024} * static_cast<std::size_t>(settings::staging_chunk_kib());
  return bytes;
}

//! Bytes per chunk of one copy: a sixteenth of the copy, at least 1 MiB and at
//! most a slot. A small copy in one or two whole slots runs its two halves
//! one after the other; in smaller chunks they overlap sooner, but each chunk
//! costs two events and two waits. sluice-probe-staging on one H200
//! (docs/results/runs/2026-11-25-staged-pipeline-one-h200.md): 8 MiB moved at 26.1 GB/s in one 8
//! MiB chunk and at 37.5 in 1 MiB chunks; 64 MiB at 45.1 in 8 MiB chunks and at 46.5 in 4 MiB ones;
//! 256 KiB chunks never passed 30.
std::size_t chunk_for(std::size_t total, std::size_t slot) {
  constexpr std::size_t granule = 64 * 1024;
  const std::size_t sixteenth = (total / 16 + granule - 1) / granule * granule;
  return std::clamp(sixteenth, std::min<std::size_t>(1024 * 1024, slot), slot);
}

}  // namespace

struct staging_set {
  int src = 0;
  int dst = 0;
  bool helper_on_dst = false;  // the caller's stream is on src
  int priority = 0;            // the caller stream's native priority
  std::size_t chunk = 0;       // bytes per slot

  api::stream_t helper{};
  native_stream helper_native;    // the helper's pooled vendor stream (given back, never destroyed)
  unsigned char* host = nullptr;  // slots * chunk bytes, pinned
  std::array<api::event_t, slots> filled{};   // device src
  std::array<api::event_t, slots> drained{};  // device dst
  std::array<bool, slots> used{};
  api::event_t start{};  // the caller's device (helper on src: where it starts)
  api::event_t done{};   // the caller's device: after everything of the last use
  bool ever_used = false;
  std::size_t next = 0;  // the next slot to fill

  std::mutex m;  // one enqueue at a time (several threads may share a stream)
};

namespace {

void destroy_parts(staging_set& s) noexcept {
  for (auto e : s.filled)
    if (e != api::event_t{}) (void)api::event_destroy(e);
  for (auto e : s.drained)
    if (e != api::event_t{}) (void)api::event_destroy(e);
  if (s.start != api::event_t{}) (void)api::event_destroy(s.start);
  if (s.done != api::event_t{}) (void)api::event_destroy(s.done);
  if (s.helper != api::stream_t{})
    engine().devices[static_cast<std::size_t>(s.helper_on_dst ? s.dst : s.src)].natives.give(
        s.helper_native);
  if (s.host != nullptr) (void)api::free_host(s.host);
}

std::unique_ptr<staging_set> create_set(int src, int dst, bool helper_on_dst, int priority) {
  constexpr const char* api_name = "sluice::copy_peer (staged)";
  auto set = std::make_unique<staging_set>();
  set->src = src;
  set->dst = dst;
  set->helper_on_dst = helper_on_dst;
  set->priority = priority;
  set->chunk = chunk_bytes();
  const std::size_t chunk = set->chunk;
  const int own = helper_on_dst ? src : dst;
  try {
    void* host = nullptr;
    check(api::host_alloc(&host, slots * chunk), api_name, ": ", slots * chunk,
          " bytes of pinned staging memory");
    set->host = static_cast<unsigned char*>(host);
    {
      // From the pool: no stream is created while the device may be busy (IND-4).
      const int on = helper_on_dst ? dst : src;
      auto& d = engine().dev(on, api_name);
      set->helper_native = d.natives.take(d, priority, api_name);
      set->helper = set->helper_native.stream;
    }
    {
      const scoped_device on(src);
      for (auto& e : set->filled)
        check(api::event_create(&e, false, false), api_name, ": an event on device ", src);
    }
    {
      const scoped_device on(dst);
      for (auto& e : set->drained)
        check(api::event_create(&e, false, false), api_name, ": an event on device ", dst);
    }
    const scoped_device on(own);
    check(api::event_create(&set->start, false, false), api_name, ": an event on device ", own);
    check(api::event_create(&set->done, false, false), api_name, ": an event on device ", own);
  } catch (...) {
    destroy_parts(*set);
    throw;
  }
  return set;
}

bool matches(const staging_set& s, int src, int dst, bool helper_on_dst, int priority) noexcept {
  return s.src == src && s.dst == dst && s.helper_on_dst == helper_on_dst && s.priority == priority;
}

//! The caller stream's set for this copy: its own from an earlier copy, an
//! idle one from the pool, or a new one.
staging_set& acquire(stream_state& u, int src, int dst) {
  const bool helper_on_dst = u.device == src;
  {
    std::lock_guard<std::mutex> lock(u.staging_m);
    for (staging_set* s : u.staging)
      if (matches(*s, src, dst, helper_on_dst, u.native_priority)) return *s;
  }
  auto& e = engine();
  staging_set* found = nullptr;
  {
    std::lock_guard<std::mutex> lock(e.staging_m);
    auto& pool = e.staging_free;
    for (std::size_t i = 0; i < pool.size(); ++i) {
      staging_set* s = pool[i];
      if (!matches(*s, src, dst, helper_on_dst, u.native_priority)) continue;
      // Only once its last use is over: never wait for another stream's copy.
      if (s->ever_used && !api::event_query(s->done).ok()) continue;
      found = s;
      pool[i] = pool.back();
      pool.pop_back();
      break;
    }
  }
  std::unique_ptr<staging_set> fresh;
  if (found == nullptr) {
    fresh = create_set(src, dst, helper_on_dst, u.native_priority);
    found = fresh.get();
  }
  try {
    std::lock_guard<std::mutex> lock(u.staging_m);
    u.staging.push_back(found);
  } catch (...) {
    if (!fresh) {
      std::lock_guard<std::mutex> lock(e.staging_m);
      e.staging_free.push_back(found);  // back to the pool it came from
    } else {
      destroy_parts(*fresh);
    }
    throw;
  }
  (void)fresh.release();
  return *found;
}

}  // namespace

void recycle_staging(stream_state& s) noexcept {
  if (s.staging.empty()) return;
  auto& e = engine();
  std::lock_guard<std::mutex> lock(e.staging_m);
  for (staging_set* set : s.staging) {
    try {
      e.staging_free.push_back(set);
    } catch (...) {
      // No memory to pool it: the set stays unused (never freed anyway).
    }
  }
  s.staging.clear();
}

namespace {

//! One part of a chunk: `rows` rows of `width` bytes (pitches between them), at offset `at` of
//! the slot, where they lie packed (the slot's pitch is the width).
struct staged_part {
  unsigned char* dst;
  const unsigned char* src;
  std::size_t width, rows, dst_pitch, src_pitch, at;
};

//! What a staged copy moves, a slot's worth at a time.
class chunk_source {
 public:
  virtual ~chunk_source() = default;
  //! The next chunk's parts, at most `chunk` bytes in all; false when nothing is left.
  virtual bool next(std::size_t chunk, std::vector<staged_part>& parts) = 0;
};

//! Contiguous pieces: as much of the remaining pieces as one slot holds.
class contiguous_source final : public chunk_source {
 public:
  contiguous_source(const peer_piece* pieces, std::size_t count) : pieces_(pieces), count_(count) {}
  bool next(std::size_t chunk, std::vector<staged_part>& parts) override {
    parts.clear();
    std::size_t filled = 0;
    while (i_ < count_ && filled < chunk) {
      const peer_piece& p = pieces_[i_];
      const std::size_t n = std::min(p.bytes - offset_, chunk - filled);
      if (n > 0)
        parts.push_back({static_cast<unsigned char*>(p.dst) + offset_,
                         static_cast<const unsigned char*>(p.src) + offset_, n, 1, 0, 0, filled});
      filled += n;
      offset_ += n;
      if (offset_ == p.bytes) {
        ++i_;
        offset_ = 0;
      }
    }
    return !parts.empty();
  }

 private:
  const peer_piece* pieces_;
  std::size_t count_;
  std::size_t i_ = 0, offset_ = 0;
};

//! Strided pieces: bands of whole rows of one plane, each one 2-D copy into the slot and one
//! out of it (rows wider than a slot: split, one contiguous part each). Row steps above
//! `pitch_limit` (the vendor's maximum pitch): one row per part.
class strided_source final : public chunk_source {
 public:
  strided_source(const strided_plan* pieces, std::size_t count, std::size_t pitch_limit)
      : pieces_(pieces), count_(count), pitch_limit_(pitch_limit) {}
  bool next(std::size_t chunk, std::vector<staged_part>& parts) override {
    parts.clear();
    std::size_t filled = 0;
    while (i_ < count_ && filled < chunk) {
      const strided_plan& p = pieces_[i_];
      if (p.width <= chunk) {
        if (p.width > chunk - filled) break;  // the next row starts the next chunk
        const bool bands = p.dst.row_step <= pitch_limit_ && p.src.row_step <= pitch_limit_;
        const std::size_t k =
            bands ? std::min(p.rows - y_, (chunk - filled) / p.width) : std::size_t{1};
        parts.push_back({p.dst_at(y_, z_), p.src_at(y_, z_), p.width, k, p.dst.row_step,
                         p.src.row_step, filled});
        filled += k * p.width;
        y_ += k;
      } else {
        const std::size_t n = std::min(p.width - x_, chunk - filled);
        parts.push_back({p.dst_at(y_, z_) + x_, p.src_at(y_, z_) + x_, n, 1, 0, 0, filled});
        filled += n;
        x_ += n;
        if (x_ == p.width) {
          x_ = 0;
          ++y_;
        }
      }
      if (y_ == p.rows) {
        y_ = 0;
        if (++z_ == p.planes) {
          z_ = 0;
          ++i_;
        }
      }
    }
    return !parts.empty();
  }

 private:
  const strided_plan* pieces_;
  std::size_t count_;
  std::size_t pitch_limit_;
  std::size_t i_ = 0, z_ = 0, y_ = 0, x_ = 0;
};

//! One part into the slot (into_slot) or out of it, on stream s of device `device`.
void copy_part(unsigned char* dst, std::size_t dst_pitch, const unsigned char* src,
               std::size_t src_pitch, const staged_part& p, api::stream_t s, int device,
               bool into_slot, const char* api_name) {
  const char* const way = into_slot ? " to pinned staging memory from device "
                                    : " from pinned staging memory to device ";
  if (p.rows == 1)
    check(api::memcpy_async(dst, src, p.width, s), api_name, ": ", p.width, " bytes", way, device);
  else
    check(api::memcpy_2d_async(dst, dst_pitch, src, src_pitch, p.width, p.rows, s), api_name, ": ",
          p.rows, " rows of ", p.width, " bytes", way, device);
}

void run_staged(stream_state& u, int dst_dev, int src_dev, std::size_t total, chunk_source& source,
                const char* api_name) {
  staging_set& set = acquire(u, src_dev, dst_dev);
  std::lock_guard<std::mutex> lock(set.m);
  const std::size_t chunk = chunk_for(total, set.chunk);
  const api::stream_t on_src = set.helper_on_dst ? u.native : set.helper;
  const api::stream_t on_dst = set.helper_on_dst ? set.helper : u.native;
  // The caller's current device is restored at the end (XDEV-2); in between
  // the device of each step's memory is current (pool memory needs it: see
  // device_current, enqueue_scope.hpp).
  struct devices {
    const char* api_name;
    int original = 0;
    int current = 0;
    explicit devices(const char* a) : api_name(a) {
      check(api::get_device(&original), api_name, ": reading the current device");
      current = original;
    }
    devices(const devices&) = delete;
    devices& operator=(const devices&) = delete;
    ~devices() {
      if (current != original) (void)api::set_device(original);
    }
    void select(int d) {
      if (current == d) return;
      check(api::set_device(d), api_name, ": selecting device ", d);
      current = d;
    }
  } on(api_name);
  // From here on the set may have work in flight: another stream takes it from
  // the pool only once `done` has completed.
  set.ever_used = true;
  if (!set.helper_on_dst) {
    // The helper on src starts after the caller's earlier work.
    check(api::event_record(set.start, u.native), api_name, ": recording on device ", dst_dev);
    check(api::stream_wait_event(on_src, set.start), api_name, ": device ", src_dev,
          " waiting for device ", dst_dev);
  }
  std::vector<staged_part> parts;
  std::size_t last = slots;
  while (source.next(chunk, parts)) {
    const std::size_t k = set.next;
    unsigned char* slot = set.host + k * chunk;
    on.select(src_dev);
    if (set.used[k])
      check(api::stream_wait_event(on_src, set.drained[k]), api_name, ": device ", src_dev,
            " waiting until device ", dst_dev, " has emptied a staging slot");
    for (const staged_part& p : parts)
      copy_part(slot + p.at, p.width, p.src, p.src_pitch, p, on_src, src_dev, true, api_name);
    check(api::event_record(set.filled[k], on_src), api_name, ": recording on device ", src_dev);
    on.select(dst_dev);
    check(api::stream_wait_event(on_dst, set.filled[k]), api_name, ": device ", dst_dev,
          " waiting for device ", src_dev, " to fill a staging slot");
    for (const staged_part& p : parts)
      copy_part(p.dst, p.dst_pitch, slot + p.at, p.width, p, on_dst, dst_dev, false, api_name);
    check(api::event_record(set.drained[k], on_dst), api_name, ": recording on device ", dst_dev);
    set.used[k] = true;
    set.next = (k + 1) % slots;
    last = k;
  }
  if (last == slots) return;  // nothing to copy
  if (set.helper_on_dst)
    // The caller's stream (on src) ends after the helper's last step; D runs
    // in order, so the last drained covers every earlier one.
    check(api::stream_wait_event(u.native, set.drained[last]), api_name, ": device ", src_dev,
          " waiting for device ", dst_dev, " to finish the staged copy");
  check(api::event_record(set.done, u.native), api_name, ": recording on device ", u.device);
}

}  // namespace

void staged_copy(stream_state& u, int dst_dev, int src_dev, const peer_piece* pieces,
                 std::size_t count, const char* api_name) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += pieces[i].bytes;
  contiguous_source source(pieces, count);
  run_staged(u, dst_dev, src_dev, total, source, api_name);
}

void staged_copy_strided(stream_state& u, int dst_dev, int src_dev, const strided_plan* pieces,
                         std::size_t count, const char* api_name) {
  std::size_t total = 0;
  for (std::size_t i = 0; i < count; ++i) total += pieces[i].bytes;
  // Both devices set up (the other one may not be yet): their maximum pitch is known then.
  const std::size_t limit =
      std::min({engine().dev(src_dev, api_name).max_pitch,
                engine().dev(dst_dev, api_name).max_pitch, api::strided_field_max});
  strided_source source(pieces, count, limit);
  run_staged(u, dst_dev, src_dev, total, source, api_name);
}

}  // namespace sluice::detail
