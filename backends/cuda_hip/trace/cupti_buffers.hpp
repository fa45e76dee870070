// The activity buffers the CUPTI trace source hands to CUPTI
// (cupti_source.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

namespace sluice::detail {

constexpr std::size_t cupti_buffer_bytes = 8u << 20;  // per activity buffer CUPTI asks for

// Activity buffers are handed to CUPTI from a pool of buffers allocated and
// touched once (the first trace_begin), not allocated when CUPTI asks for
// one: CUPTI asks on the thread that makes the first recorded call of a
// trace, and the pool keeps the allocation off that enqueuing thread. A fresh
// 8 MiB buffer's page faults are not what made the first traced call cost
// 0.6 ms (bench/trace_cost, fill_64B_first_call, 2x H200: 0.58 ms with the
// pool, 0.64 ms without; docs/results/runs/2026-11-27-cupti-trace-source.md).
// SLUICE_CUPTI_BUFFERS=N: buffers prepared (default 2; 0: allocated when
// CUPTI asks).
class cupti_buffer_pool {
 public:
  void prepare(std::size_t n) {
    std::lock_guard<std::mutex> lock(m_);
    while (free_.size() < n && made_ < n) {
      auto* b = static_cast<uint8_t*>(std::aligned_alloc(8, cupti_buffer_bytes));
      if (b == nullptr) return;
      std::memset(b, 0, cupti_buffer_bytes);  // fault the pages in now
      free_.push_back(b);
      ++made_;
    }
  }
  uint8_t* get() {
    {
      std::lock_guard<std::mutex> lock(m_);
      if (!free_.empty()) {
        uint8_t* b = free_.back();
        free_.pop_back();
        return b;
      }
      ++asked_beyond_;
    }
    return static_cast<uint8_t*>(std::aligned_alloc(8, cupti_buffer_bytes));
  }
  void put(uint8_t* b) {
    std::lock_guard<std::mutex> lock(m_);
    if (made_ > 0 && free_.size() < made_) {
      free_.push_back(b);
      return;
    }
    std::free(b);
  }
  //! Buffers CUPTI asked for while none was prepared (since the last call).
  std::uint64_t take_asked_beyond() {
    std::lock_guard<std::mutex> lock(m_);
    return std::exchange(asked_beyond_, 0);
  }

 private:
  std::mutex m_;
  std::vector<uint8_t*> free_;
  std::size_t made_ = 0;
  std::uint64_t asked_beyond_ = 0;
};

inline cupti_buffer_pool& cupti_buffers() {
  static auto* p = new cupti_buffer_pool();  // never destroyed: CUPTI may hand buffers back at exit
  return *p;
}

}  // namespace sluice::detail
