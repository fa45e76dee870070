// sluice/memory.hpp: device and pinned host memory, copies and fills.
//
// Synopsis
//   template <class T> class device_buffer {      // owning, move-only
//     device_buffer(device d, std::size_t count);  // synchronous allocation
//     device_buffer(stream_ref s, std::size_t count); // stream-ordered alloc and free
//     T* data(); std::size_t size(); device device(); void record_stream(stream_ref);
//   };
//   template <class T> class pinned_buffer {      // page-locked host memory, move-only
//     explicit pinned_buffer(std::size_t count);
//   };
//   void copy(stream_ref s, void* dst, const void* src, std::size_t bytes);
//   void fill(stream_ref s, void* dst, unsigned char value, std::size_t bytes);
//   struct extent { std::size_t width_bytes = 0, height = 1, depth = 1; };
//   struct pitched_ptr { void* ptr; std::size_t pitch; std::size_t rows_per_plane; };
//   struct const_pitched_ptr { const void* ptr; std::size_t pitch; std::size_t rows_per_plane; };
//   void copy(stream_ref s, pitched_ptr dst, const_pitched_ptr src, extent e);  // strided
//   class registered_host_memory {               // pins the program's memory in place
//     registered_host_memory(void* p, std::size_t bytes);  // move-only
//   };
#pragma once

#include <sluice/device.hpp>
#include <sluice/stream.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace sluice {

namespace detail {
struct allocation;    // defined by the backend
struct registration;  // defined by the backend: one registered_host_memory range

//! count * element_size, or errc::invalid_argument when that overflows.
std::size_t checked_bytes(std::size_t count, std::size_t element_size, const char* operation);

void* allocate_device(sluice::device d, std::size_t bytes, allocation** out);
void* allocate_device_async(stream_ref s, std::size_t bytes, allocation** out);
void release_device(allocation* a) noexcept;  // honors record_stream and stream order
void record_stream(allocation* a, stream_ref s);
int allocation_device(const allocation* a) noexcept;
void* allocate_pinned(std::size_t bytes, allocation** out);
void release_pinned(allocation* a) noexcept;
//! Registers [p, p + bytes) (registered_host_memory's constructor).
registration* register_host_memory(void* p, std::size_t bytes);
//! Unregisters without blocking the caller; null is a no-op.
void release_registration(registration* r) noexcept;
}  // namespace detail

namespace detail {
[[noreturn]] void throw_moved_from(const char* operation);

//! What device_buffer and pinned_buffer share: an owned allocation holding
//! `size` objects of T, released by Release, move-only, empty when moved from.
template <class T, void (*Release)(allocation*) noexcept>
class owned_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "sluice buffers need a trivially copyable T");

 public:
  ~owned_buffer() { Release(alloc_); }
  owned_buffer(owned_buffer&& o) noexcept
      : alloc_(std::exchange(o.alloc_, nullptr)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  owned_buffer& operator=(owned_buffer&& o) noexcept {
    if (this != &o) {
      Release(alloc_);
      alloc_ = std::exchange(o.alloc_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  owned_buffer(const owned_buffer&) = delete;
  owned_buffer& operator=(const owned_buffer&) = delete;

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }

 protected:
  //! `allocate(bytes, &alloc_)` returns the memory; it runs after alloc_ is null.
  template <class Allocate>
  owned_buffer(std::size_t count, const char* operation, Allocate&& allocate)
      : data_(static_cast<T*>(allocate(checked_bytes(count, sizeof(T), operation), &alloc_))),
        size_(count) {}

  allocation* checked(const char* operation) const {
    if (alloc_ == nullptr) throw_moved_from(operation);
    return alloc_;
  }

 private:
  // alloc_ first: the constructor's initializer of data_ writes it.
  allocation* alloc_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};
}  // namespace detail

//! Device memory for `count` objects of T (trivially copyable). Owning,
//! move-only. A moved-from buffer is empty: data() is null, size() is 0, and
//! device() / record_stream() throw errc::invalid_handle.
//!
//! Freeing never blocks the caller. Memory from device_buffer(d, n) is
//! released once the work enqueued on d before destruction completes (CUDA's
//! cudaFree blocks for that instead); memory from device_buffer(s, n) is freed
//! in stream order on s (MEM-4). Either way, it also waits for the work
//! enqueued before destruction on every stream given to record_stream (MEM-6).
template <class T>
class device_buffer : public detail::owned_buffer<T, detail::release_device> {
  using base = detail::owned_buffer<T, detail::release_device>;

 public:
  //! Synchronous allocation. errc::invalid_device, errc::invalid_argument
  //! (count * sizeof(T) overflows), errc::out_of_memory.
  device_buffer(sluice::device d, std::size_t count)
      : base(count, "sluice::device_buffer", [d](std::size_t bytes, detail::allocation** out) {
          return detail::allocate_device(d, bytes, out);
        }) {}

  //! Stream-ordered allocation on s: usable by later work on s; other streams
  //! must wait on an event recorded after this call first (MEM-4).
  device_buffer(stream_ref s, std::size_t count)
      : base(count, "sluice::device_buffer", [s](std::size_t bytes, detail::allocation** out) {
          return detail::allocate_device_async(s, bytes, out);
        }) {}

  //! errc::invalid_handle on a moved-from buffer.
  sluice::device device() const {
    return sluice::device(detail::allocation_device(this->checked("sluice::device_buffer")));
  }

  //! s uses this memory too: freeing waits for the work enqueued on s up to
  //! the moment of destruction (MEM-6).
  void record_stream(stream_ref s) {
    detail::record_stream(this->checked("sluice::device_buffer"), s);
  }
};

//! Page-locked host memory for `count` objects of T. Owning, move-only; freed
//! synchronously by the destructor (order the streams that use it first).
template <class T>
class pinned_buffer : public detail::owned_buffer<T, detail::release_pinned> {
  using base = detail::owned_buffer<T, detail::release_pinned>;

 public:
  explicit pinned_buffer(std::size_t count)
      : base(count, "sluice::pinned_buffer", [](std::size_t bytes, detail::allocation** out) {
          return detail::allocate_pinned(bytes, out);
        }) {}

  T& operator[](std::size_t i) noexcept { return this->data()[i]; }
  const T& operator[](std::size_t i) const noexcept { return this->data()[i]; }
  T* begin() noexcept { return this->data(); }
  T* end() noexcept { return this->data() + this->size(); }
};

//! Copies `bytes` from src to dst in stream order on s, in any direction
//! (host, pinned, device). Zero bytes: a no-op. errc::invalid_argument for a
//! null pointer with non-zero size, overlapping ranges, or a range that runs
//! past the end of a sluice allocation; nothing is enqueued then (MEM-1).
//! Pinned <-> device copies never block (MEM-2). A pageable source may be
//! reused when the call returns; a pageable destination holds the data when
//! the call returns (MEM-3: the call blocks until the copy has run).
void copy(stream_ref s, void* dst, const void* src, std::size_t bytes);

//! Sets `bytes` bytes at dst to value, in stream order on s. Same checks as copy.
void fill(stream_ref s, void* dst, unsigned char value, std::size_t bytes);

//! The shape of a strided copy: `width_bytes` bytes per row, `height` rows per
//! plane, `depth` planes. Any of them zero: the copy is a no-op.
struct extent {
  std::size_t width_bytes = 0, height = 1, depth = 1;
};

//! One end of a strided copy. Byte (x, y, z) of an extent is at
//! ptr + z * pitch * rows_per_plane + y * pitch + x. pitch >= width_bytes where
//! height > 1 or depth > 1; rows_per_plane >= height where depth > 1 (else
//! either is ignored). The footprint of a non-zero extent is the half-open range
//! [ptr, ptr + (depth-1) * pitch * rows_per_plane + (height-1) * pitch + width_bytes).
struct pitched_ptr {
  void* ptr;
  std::size_t pitch;           //!< bytes from one row to the next
  std::size_t rows_per_plane;  //!< rows from one plane to the next
};

//! The source end of a strided copy (as pitched_ptr, read only).
struct const_pitched_ptr {
  const void* ptr;
  std::size_t pitch;
  std::size_t rows_per_plane;
};

//! Copies the extent e from src to dst in stream order on s, in any direction
//! (host, pinned, registered, device of s's device; between devices use
//! copy_peer). Only the bytes of the extent are written: the bytes between
//! rows and planes stay as they are (MEM-7). A zero width, height or depth is a
//! no-op whatever the pointers. errc::invalid_argument, nothing enqueued, for
//! a null pointer with a non-zero extent, a pitch below the width or
//! rows_per_plane below the height (where they count), a footprint that
//! overflows or runs past the end of a sluice allocation, memory of another
//! device, and overlapping footprints (allowed only with the same pitch and
//! rows_per_plane and disjoint columns: a ghost column copied inside one
//! array). Blocking as copy(): a pageable end (one not wholly inside sluice
//! memory or a registered_host_memory range) makes the call wait (MEM-3).
void copy(stream_ref s, pitched_ptr dst, const_pitched_ptr src, extent e);

//! Memory the program already has (a std::vector's, a malloc'ed array), pinned
//! in place for every device: copies whose footprint lies wholly inside the
//! range are asynchronous like pinned_buffer copies (MEM-8); a footprint only
//! partly inside counts as pageable. Move-only; a moved-from object is empty.
//! The program keeps the range alive, and unregistered only after the copies
//! that use it have finished (order them first, as for any buffer).
class registered_host_memory {
 public:
  //! errc::invalid_argument for a null p, zero bytes, a range that overflows
  //! the address space, overlaps another registration or memory sluice
  //! allocated. GPU backends: the vendor's registration (portable) may fail
  //! too (errc::backend_failure, errc::out_of_memory).
  registered_host_memory(void* p, std::size_t bytes)
      : state_(detail::register_host_memory(p, bytes)), data_(p), size_(bytes) {}
  registered_host_memory(registered_host_memory&& o) noexcept
      : state_(std::exchange(o.state_, nullptr)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  registered_host_memory& operator=(registered_host_memory&& o) noexcept {
    if (this != &o) {
      detail::release_registration(state_);
      state_ = std::exchange(o.state_, nullptr);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  registered_host_memory(const registered_host_memory&) = delete;
  registered_host_memory& operator=(const registered_host_memory&) = delete;
  //! Returns at once: the vendor's unregister (which waits for the device's
  //! work in flight) runs off the calling thread. Never throws.
  ~registered_host_memory() { detail::release_registration(state_); }

  void* data() const noexcept { return data_; }        //!< null when moved from
  std::size_t size() const noexcept { return size_; }  //!< 0 when moved from

 private:
  detail::registration* state_ = nullptr;
  void* data_ = nullptr;
  std::size_t size_ = 0;
};

}  // namespace sluice
