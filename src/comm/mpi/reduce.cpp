// The mpi engine's reductions on the host, one pass per chunk.
#include "comm/mpi/reduce.hpp"

#include <algorithm>
#include <cstdint>

namespace sluice::comm::detail::mpi {

namespace {

// out = a op b (out may be a): the chunk's own input and what came from the
// left, in one pass (no copy of the input into the output first).
template <class T>
void reduce_typed(T* out, const T* a, const T* b, std::size_t n, reduce_op op) {
  switch (op) {
    case reduce_op::sum:
      for (std::size_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
      return;
    case reduce_op::prod:
      for (std::size_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
      return;
    case reduce_op::min:
      for (std::size_t i = 0; i < n; ++i) out[i] = std::min(a[i], b[i]);
      return;
    case reduce_op::max:
      for (std::size_t i = 0; i < n; ++i) out[i] = std::max(a[i], b[i]);
      return;
  }
}

}  // namespace

void reduce(void* out, const void* a, const void* b, std::size_t n, datatype t,
            reduce_op op) noexcept {
  switch (t) {
    case datatype::int32:
      return reduce_typed(static_cast<std::int32_t*>(out), static_cast<const std::int32_t*>(a),
                          static_cast<const std::int32_t*>(b), n, op);
    case datatype::int64:
      return reduce_typed(static_cast<std::int64_t*>(out), static_cast<const std::int64_t*>(a),
                          static_cast<const std::int64_t*>(b), n, op);
    case datatype::float32:
      return reduce_typed(static_cast<float*>(out), static_cast<const float*>(a),
                          static_cast<const float*>(b), n, op);
    case datatype::float64:
      return reduce_typed(static_cast<double*>(out), static_cast<const double*>(a),
                          static_cast<const double*>(b), n, op);
  }
}

}  // namespace sluice::comm::detail::mpi
