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
#pragma once

#include <sluice/device.hpp>
#include <sluice/stream.hpp>

#include <cstddef>
#include <type_traits>
#include <utility>

namespace sluice {

namespace detail {
struct allocation;  // defined by the backend

//! count * element_size, or errc::invalid_argument when that overflows.
std::size_t checked_bytes(std::size_t count, std::size_t element_size, const char* operation);

void* allocate_device(sluice::device d, std::size_t bytes, allocation** out);
void* allocate_device_async(stream_ref s, std::size_t bytes, allocation** out);
void release_device(allocation* a) noexcept;  // honors record_stream and stream order
void record_stream(allocation* a, stream_ref s);
int allocation_device(const allocation* a) noexcept;
void* allocate_pinned(std::size_t bytes, allocation** out);
void release_pinned(allocation* a) noexcept;
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
class device_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "device_buffer<T> needs a trivially copyable T");

 public:
  //! Synchronous allocation. errc::invalid_device, errc::invalid_argument
  //! (count * sizeof(T) overflows), errc::out_of_memory.
  device_buffer(sluice::device d, std::size_t count)
      : data_(static_cast<T*>(detail::allocate_device(
            d, detail::checked_bytes(count, sizeof(T), "sluice::device_buffer"), &alloc_))),
        size_(count) {}

  //! Stream-ordered allocation on s: usable by later work on s; other streams
  //! must wait on an event recorded after this call first (MEM-4).
  device_buffer(stream_ref s, std::size_t count)
      : data_(static_cast<T*>(detail::allocate_device_async(
            s, detail::checked_bytes(count, sizeof(T), "sluice::device_buffer"), &alloc_))),
        size_(count) {}

  ~device_buffer() { detail::release_device(alloc_); }

  device_buffer(device_buffer&& o) noexcept
      : alloc_(std::exchange(o.alloc_, nullptr)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  device_buffer& operator=(device_buffer&& o) noexcept {
    if (this != &o) {
      detail::release_device(alloc_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      alloc_ = std::exchange(o.alloc_, nullptr);
    }
    return *this;
  }
  device_buffer(const device_buffer&) = delete;
  device_buffer& operator=(const device_buffer&) = delete;

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }

  //! errc::invalid_handle on a moved-from buffer.
  sluice::device device() const { return sluice::device(detail::allocation_device(checked())); }

  //! s uses this memory too: freeing waits for the work enqueued on s up to
  //! the moment of destruction (MEM-6).
  void record_stream(stream_ref s) { detail::record_stream(checked(), s); }

 private:
  detail::allocation* checked() const;

  // alloc_ first: the constructors' initializers of data_ write it.
  detail::allocation* alloc_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
};

namespace detail {
[[noreturn]] void throw_moved_from(const char* operation);
}

template <class T>
detail::allocation* device_buffer<T>::checked() const {
  if (alloc_ == nullptr) detail::throw_moved_from("sluice::device_buffer");
  return alloc_;
}

//! Page-locked host memory for `count` objects of T. Owning, move-only; freed
//! synchronously by the destructor (order the streams that use it first).
template <class T>
class pinned_buffer {
  static_assert(std::is_trivially_copyable_v<T>, "pinned_buffer<T> needs a trivially copyable T");

 public:
  explicit pinned_buffer(std::size_t count)
      : data_(static_cast<T*>(detail::allocate_pinned(
            detail::checked_bytes(count, sizeof(T), "sluice::pinned_buffer"), &alloc_))),
        size_(count) {}
  ~pinned_buffer() { detail::release_pinned(alloc_); }
  pinned_buffer(pinned_buffer&& o) noexcept
      : alloc_(std::exchange(o.alloc_, nullptr)),
        data_(std::exchange(o.data_, nullptr)),
        size_(std::exchange(o.size_, 0)) {}
  pinned_buffer& operator=(pinned_buffer&& o) noexcept {
    if (this != &o) {
      detail::release_pinned(alloc_);
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
      alloc_ = std::exchange(o.alloc_, nullptr);
    }
    return *this;
  }
  pinned_buffer(const pinned_buffer&) = delete;
  pinned_buffer& operator=(const pinned_buffer&) = delete;

  T* data() noexcept { return data_; }
  const T* data() const noexcept { return data_; }
  std::size_t size() const noexcept { return size_; }
  std::size_t size_bytes() const noexcept { return size_ * sizeof(T); }
  T& operator[](std::size_t i) noexcept { return data_[i]; }
  const T& operator[](std::size_t i) const noexcept { return data_[i]; }
  T* begin() noexcept { return data_; }
  T* end() noexcept { return data_ + size_; }

 private:
  // alloc_ first: the constructors' initializers of data_ write it.
  detail::allocation* alloc_ = nullptr;
  T* data_ = nullptr;
  std::size_t size_ = 0;
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

}  // namespace sluice
