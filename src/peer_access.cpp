#include "peer_access.hpp"

namespace sluice::detail {

void peer_matrix::reset(int count) {
  const auto n = static_cast<std::size_t>(count) * static_cast<std::size_t>(count);
  flags_ = std::make_unique<std::atomic<bool>[]>(n);
  for (std::size_t i = 0; i < n; ++i) flags_[i].store(false, std::memory_order_relaxed);
  count_ = count;
}

peer_matrix& peer_access() {
  static auto* m = new peer_matrix();  // never destroyed: read until the process ends
  return *m;
}

}  // namespace sluice::detail
