// Native streams made ahead of need (IND-4). On CUDA 13 (driver 580.159.04,
// H200 and H100) cudaStreamCreate* waits for the device's pending work once
// the context holds about 33 streams (bench/probes/held_calls/,
// docs/vendor-differences.md): a program that held one stream and then
// created streams deadlocked in the 34th creation. So no sluice call creates a
// vendor stream while the device may be busy:
// - each device keeps a pool of vendor streams, each with its position event
//   (wait(stream_ref)); a destroyed sluice stream gives its vendor stream
//   back instead of destroying it, and a stream that still has work (LIFE-1)
//   is handed out again only once that work is done (IND-1: no false
//   dependency on a dead stream's work);
// - at the device's first use, with nothing of sluice's on it, the pool is
//   filled with `reserve` streams of each priority that sluice::priority names
//   (SLUICE_STREAM_RESERVE, default api::stream_reserve_default);
// - whenever the pool of a priority runs below `reserve` and every stream sluice
//   has on the device is idle ("quiet"), it is filled up again; when it is
//   empty and the device is not quiet, the call fails with errc::not_ready
//   before anything is made, naming the variable and reserve_streams();
// - streams are handed out so that live streams spread over the device's
//   hardware queues (api::hardware_queues_variable): the vendor assigns them
//   round-robin in creation order, and two live streams on one queue can
//   falsely serialize (IND-1's bound). The driver may allocate fewer queues
//   than asked ("the number actually allocated by the driver may differ"):
//   live streams spread first over the vendor's default count (when it
//   divides the count asked for, its queues are the asked ones modulo it),
//   then over the count asked for, so that they are apart under either.
#pragma once

#include SLUICE_GPU_API_HEADER

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace sluice::detail {

struct device_state;

//! A vendor stream of the pool and the event that marks positions on it.
struct native_stream {
  gpu::SLUICE_GPU_API::stream_t stream{};
  gpu::SLUICE_GPU_API::event_t position{};
  int priority = 0;
  int queue = 0;            // the hardware queue it was assigned (creation order)
  std::uint64_t index = 0;  // its place in the device's creation order
  bool counted = true;      // still counted among its queue's users (retire())
};

//! One device's pool (a member of device_state).
class stream_pool {
 public:
  //! At the device's first use (nothing of sluice's runs on it yet): reads
  //! SLUICE_STREAM_RESERVE and makes `reserve` streams of each given priority.
  void fill(device_state& d, const std::vector<int>& priorities);

  //! A stream of `priority` that has no pending work, without waiting for the
  //! device's work: errc::not_ready when none is idle and one cannot be made
  //! now (the device is not quiet). `what` names the caller in errors.
  native_stream take(device_state& d, int priority, const char* what);

  //! take() for sluice's own streams that live as long as the process (the
  //! allocation stream, the tracer's): the pool keeps the whole entry, the
  //! caller gets the vendor stream. They never wait for the host, so they
  //! count as no queue's user.
  gpu::SLUICE_GPU_API::stream_t take_for_life(device_state& d, int priority, const char* what);

  //! Gives a stream back (its work may still be pending). Never blocks. Its
  //! queue's count of users drops unless retire() dropped it already.
  void give(native_stream n) noexcept;

  //! The sluice stream on `queue` was destroyed, though its state (and vendor
  //! stream) may live on a while (a free waiting on the reaper thread for every
  //! live stream, pending host functions): it no longer counts as a user of
  //! its queue, so that streams made meanwhile are spread as if it were gone;
  //! its give() then passes counted = false.
  void retire(int queue) noexcept;

  //! On a sluice thread, after give() left a priority below the reserve: the
  //! levels of fill() topped up to the reserve if the device is quiet now.
  void refill() noexcept;

  //! reserve_streams(): makes streams of `priority` until `count` are idle in the
  //! pool; may wait for the device's pending work (the caller says when).
  void reserve(device_state& d, int priority, int count, const char* what);

  //! Around every enqueue that can hold a stream until the host acts (a wait
  //! on a flag, a host function): while the pool makes vendor streams after
  //! finding sluice's streams idle, such an enqueue waits (microseconds), so
  //! that no creation can come to wait for a hold made in between.
  class hold_scope {
   public:
    explicit hold_scope(stream_pool& p) noexcept : p_(p) { p_.begin_hold(); }
    ~hold_scope() { p_.holds_.fetch_sub(1, std::memory_order_release); }
    hold_scope(const hold_scope&) = delete;
    hold_scope& operator=(const hold_scope&) = delete;

   private:
    stream_pool& p_;
  };

  //! How many streams of `priority` the pool holds, idle or not (tests, info).
  std::size_t pooled(int priority);
  int reserve_size() const noexcept { return reserve_; }

 private:
  struct entry {
    native_stream n;
    bool maybe_busy = false;  // given back with work pending: queried before reuse
  };
  //! Under m_: the index of the idle entry of `priority` on the least used
  //! hardware queue, or -1.
  int pick_idle(int priority);
  //! Under m_: makes one stream of `priority` and adds it to the pool.
  void make(device_state& d, int priority, const char* what);
  //! Under m_: idle entries of `priority` (busy ones queried now).
  int idle_count(int priority);
  std::size_t pooled_locked(int priority) const;
  //! Whether every stream sluice has on d is idle: then no creation can wait.
  bool quiet(device_state& d);

  void begin_hold() noexcept;
  //! While the pool checks that the device is quiet and makes streams: no
  //! hold_scope starts, and those in progress have ended.
  class making_scope {
   public:
    explicit making_scope(stream_pool& p) noexcept;
    ~making_scope();
    making_scope(const making_scope&) = delete;
    making_scope& operator=(const making_scope&) = delete;

   private:
    stream_pool& p_;
  };

  std::atomic<int> holds_{0};
  std::atomic<bool> making_{false};
  std::mutex m_;
  std::vector<entry> free_;
  struct made {
    gpu::SLUICE_GPU_API::stream_t stream;
    std::uint64_t index;
    int priority;
  };
  std::size_t made_of(int priority) const;
  std::vector<native_stream> for_life_;  // take_for_life()'s, kept with their events
  std::vector<made> made_;               // every stream the pool made, with its creation index
  std::vector<int> queue_users_;         // live sluice streams per hardware queue
  //! Live sluice streams per queue of the vendor's default count (a divisor of
  //! queue_users_.size(): queue % its size), should the driver allocate only that.
  std::vector<int> fallback_users_;
  void count_user(int queue, int delta) noexcept;
  int reserve_ = 0;
  device_state* device_ = nullptr;  // set by fill()
  std::vector<int> levels_;         // the priorities fill() made
  bool refill_posted_ = false;      // a refill() is queued
};

}  // namespace sluice::detail
