// sluice/flag.hpp: flags for stream memory operations (write_value / wait_value).
//
// Synopsis
//   class flag {                         // a 32-bit word in host-mapped pinned memory
//     explicit flag(std::uint32_t initial = 0);
//     std::uint32_t load() const noexcept;   // host read (acquire)
//     void store(std::uint32_t v) noexcept;  // host write (release)
//   };
#pragma once

#include <cstdint>

namespace sluice {

namespace detail {
struct flag_state;  // defined by the backend
struct access;
}  // namespace detail

//! A 32-bit word visible to the host and to every device. Neither copyable
//! nor movable (streams may be waiting on its address). Destroy it only after
//! the streams that wait on it or write it have passed those operations.
class flag {
 public:
  //! Throws errc::out_of_memory when no pinned memory is left.
  explicit flag(std::uint32_t initial = 0);
  ~flag();
  flag(const flag&) = delete;
  flag& operator=(const flag&) = delete;

  //! Host read with acquire ordering.
  std::uint32_t load() const noexcept;
  //! Host write with release ordering; releases streams waiting for <= v.
  void store(std::uint32_t v) noexcept;

 private:
  friend struct detail::access;
  detail::flag_state* state_;
};

}  // namespace sluice
