// The test data of the conformance suite and of the P2P bench: byte i of a
// pattern that changes from byte to byte and with the seed, and never repeats
// with a period a copy could hide in, so that a shifted, partial or stale copy
// shows, also one that put a whole staging chunk in the wrong place (the
// patterns before this one repeated every 64 KiB and every 1 MiB, and a staged
// copy whose slots were refilled too early passed).
#pragma once

#include <cstddef>
#include <cstdint>

namespace sluice::test_data {

inline unsigned char pattern_byte(std::size_t i, unsigned seed) {
  std::uint64_t h = static_cast<std::uint64_t>(i >> 3) * 0x9E3779B97F4A7C15ULL +
                    (std::uint64_t{seed} + 1U) * 0xBF58476D1CE4E5B9ULL;
  h ^= h >> 31;
  h *= 0x94D049BB133111EBULL;
  h ^= h >> 29;
  return static_cast<unsigned char>(h >> (8U * (i & 7U)));
}

}  // namespace sluice::test_data
