# The kokkos step's first part, before the sluice build (which gets
# -DKokkos_ROOT of it): Kokkos 4.6.01 with CUDA (scripts/kokkos-build: the
# project's CUDA 13 patch, Kokkos_ARCH_HOPPER90), then tests/kokkos_smoke
# built against it (find_package) and run: a parallel_for and a
# parallel_reduce on Kokkos::Cuda(stream) on a stream the program made.
# Sets kokkos_args and kokkos_ok (verify/kokkos.sh reads it).
# Knobs: SLUICE_KOKKOS_PREFIX=DIR  where Kokkos is installed (default:
#        build-gpu/kokkos/cuda; kept: a later run with the same inputs reuses it)
kokkos_prefix=${SLUICE_KOKKOS_PREFIX:-$root/build-gpu/kokkos/cuda}
step "kokkos: Kokkos with CUDA (scripts/kokkos-build, $kokkos_prefix), tests/kokkos_smoke"
kokkos_ok=1
if [[ $arch != 90 ]]; then
  echo "kokkos: SLUICE_GPU_ARCH=$arch, but the Kokkos build is for sm_90 (HOPPER90): built anyway"
fi
run timeout 480 scripts/kokkos-build --backend cuda --prefix "$kokkos_prefix" \
  --tarball .deps/kokkos-4.6.01.tar.gz > "$out/kokkos-build.log" 2>&1 ||
  kokkos_ok=0
cat "$out/kokkos-build.log"
[[ -f $kokkos_prefix/share/kokkos-build/times.txt ]] && cp "$kokkos_prefix/share/kokkos-build/times.txt" "$out/kokkos-build-times.txt"
if [[ $kokkos_ok -eq 1 ]]; then
  kokkos_args=(-DKokkos_ROOT="$kokkos_prefix")
  rm -rf build-gpu/kokkos/smoke
  { run cmake -S tests/kokkos_smoke -B build-gpu/kokkos/smoke -DCMAKE_BUILD_TYPE=Release -DKokkos_ROOT="$kokkos_prefix" &&
    run cmake --build build-gpu/kokkos/smoke -j "$jobs"; } > "$out/kokkos-smoke-build.log" 2>&1 || kokkos_ok=0
  tail -3 "$out/kokkos-smoke-build.log"
fi
if [[ $kokkos_ok -eq 1 ]]; then
  # Exit 77 (no device) fails here too: this machine is meant to have one.
  run timeout 120 build-gpu/kokkos/smoke/kokkos-smoke 2>&1 | tee "$out/kokkos-smoke.log"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || kokkos_ok=0
fi
[[ $kokkos_ok -eq 1 ]] || { echo "kokkos: FAILED"; status=1; }
