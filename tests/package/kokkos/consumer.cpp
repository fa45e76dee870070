// Runs one Kokkos kernel through sluice::kokkos::submit and checks its result.
#include <sluice/kokkos.hpp>

#include <cstdio>

namespace {
using exec_t = sluice::kokkos::execution_space;
void iota(const exec_t& exec, sluice::device_buffer<int>& b) {
  auto v = sluice::kokkos::view(b);
  Kokkos::parallel_for(
      Kokkos::RangePolicy<exec_t>(exec, 0, b.size()),
      KOKKOS_LAMBDA(const std::size_t i) { v(i) = static_cast<int>(i); });
}
}  // namespace

int main(int argc, char** argv) {
  const Kokkos::ScopeGuard kokkos(argc, argv);
  const sluice::device dev{0};
  sluice::stream s{dev};
  sluice::device_buffer<int> b{dev, 256};
  sluice::pinned_buffer<int> out{256};
  sluice::kokkos::submit(s, [&b](const exec_t& exec) { iota(exec, b); });
  sluice::copy(s, out.data(), b.data(), b.size_bytes());
  s.synchronize();
  for (int i = 0; i < 256; ++i)
    if (out[i] != i) {
      std::printf("sluice::kokkos: element %d is %d\n", i, out[i]);
      return 1;
    }
  std::printf("sluice::kokkos %s backend: ok\n", sluice::backend_name());
  return 0;
}
