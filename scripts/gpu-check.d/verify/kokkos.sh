# kokkos: sluice::kokkos on the GPU: Kokkos with CUDA and tests/kokkos_smoke, then the KOK rules, examples/kokkos_pipeline and the kokkos_submit bench
#
# Not in the default steps. Kokkos and tests/kokkos_smoke are built and run
# before the sluice build (setup/kokkos.sh), which then gets -DKokkos_ROOT.
# Named with hipnv alone, sluice is not built and only that part runs.
# Knobs: SLUICE_KOKKOS_PREFIX (setup/kokkos.sh)
[[ $kokkos_ok -eq 1 ]] || status=1
[[ $build_sluice -eq 1 ]] || return 0
step "kokkos: KOK conformance, examples/kokkos_pipeline, bench kokkos_submit"
if built "$bin/tests/kokkos/sluice-conformance-kokkos-cuda"; then
  SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit run timeout 300 \
    "$bin/tests/kokkos/sluice-conformance-kokkos-cuda" \
    --markdown="$out/kokkos-cuda.md" 2>&1 | tee "$out/kokkos-conformance.log" | tail -40
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
else
  echo "kokkos: sluice-conformance-kokkos-cuda was not built (see build.log)"; status=1
fi
for exe in "$bin"/examples/sluice-example-kokkos-*-cuda; do
  built "$exe" || continue
  name=$(basename "$exe")
  run timeout 120 "$exe" --trace="$out/$name.trace.json" 2>&1 | tee "$out/$name.log" | tail -15
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
  if [[ -s "$out/$name.trace.json" ]]; then
    run "$bin/tools/sluice" trace report "$out/$name.trace.json" > "$out/$name.report.txt" 2>&1 || status=1
    sed -n '1,30p' "$out/$name.report.txt"
  fi
done
for exe in "$bin"/bench/sluice-bench-kokkos-*; do
  built "$exe" || continue
  run timeout 180 "$exe" --json="$out/$(basename "$exe").json" 2>&1 | tee "$out/$(basename "$exe").log" | tail -20
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
done
