// Host-mapped words (mapped_word.hpp): a slab of pinned, host-mapped memory,
// cut into words, never handed back to the vendor.
#include "mapped_word.hpp"

#include "engine.hpp"
#include "vendor.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <new>
#include <vector>

namespace sluice::detail {

namespace {

struct word_slab {
  static constexpr std::size_t words_per_chunk = 512;  // 4 KiB: one page per pinned allocation
  std::mutex m;
  std::vector<word> free_words;
};

word_slab& slab() {
  static auto* s = new word_slab();  // never destroyed: words may be in use at exit
  return *s;
}

}  // namespace

word allocate_word() {
  auto& s = slab();
  std::lock_guard<std::mutex> lock(s.m);
  if (s.free_words.empty()) {
    (void)engine();  // the runtime's environment before its first call (a flag may come first)
    void* host = nullptr;
    check(api::host_alloc(&host, word_slab::words_per_chunk * sizeof(std::uint64_t)),
          "sluice::flag: allocating host-mapped memory");
    void* device = nullptr;
    check(api::host_device_pointer(&device, host), "sluice::flag: mapping host memory");
    auto* h = static_cast<std::atomic<std::uint64_t>*>(host);
    auto* d = static_cast<std::uint64_t*>(device);
    for (std::size_t i = word_slab::words_per_chunk; i-- > 0;) {
      new (&h[i]) std::atomic<std::uint64_t>(0);
      s.free_words.push_back(word{&h[i], &d[i]});
    }
  }
  const word w = s.free_words.back();
  s.free_words.pop_back();
  // A recycled word keeps its last value (a released flag's 1, say). Every
  // word starts at 0: a new stream's host-function gate reused a flag's word
  // whose value was already past its first ticket, and the stream ran on
  // before its first host function returned (HOST-1; found against the
  // simulated runtime, tests/fake_cudart).
  w.host->store(0, std::memory_order_relaxed);
  return w;
}

void free_word(word w) noexcept {
  auto& s = slab();
  std::lock_guard<std::mutex> lock(s.m);
  s.free_words.push_back(w);  // vector growth failing here ends the process (noexcept)
}

}  // namespace sluice::detail
