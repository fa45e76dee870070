# coldstart: each ColdStart test (IND-4 at a backend's first use) in a fresh process: ctest label cold, and the module loading mode
#
# Not in the default steps. The cold-start tests (tests/conformance/cold.cpp),
# each the first and only test of a fresh process (ctest label cold); with
# an earlier tree in .old/ (cold.cpp copied in), its suite's ColdStart tests
# the same way; with SLUICE_HIPNV_DIR's programs, sluice::hip's on HIP's
# NVIDIA platform; then sluice-probe-module-loading (bench/probes/): the loading
# mode the runtime runs with when sluice calls it first.
# Knobs: SLUICE_BASELINE_COMMIT  names .old's commit in the log
#        SLUICE_HIPNV_DIR        (verify/hipnv.sh)
# Needs: probes
step "coldstart: each ColdStart test in a fresh process"
run ctest --test-dir "$bin" --output-on-failure -L cold -R 'conformance\.cuda' --timeout 120 2>&1 |
  tee "$out/coldstart.log" | grep -E "Test +#|tests passed" || true
[[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
cold_cases=$(run "$bin/tests/sluice-conformance-cuda" --gtest_list_tests --gtest_filter='ColdStart*' |
  awk '/^[A-Za-z]/ {suite=$1} /^  / {print suite $1}')
cold_each() {  # cold_each LABEL PROGRAM [ENV...]: each case alone, 60 s each
  local label=$1 program=$2; shift 2
  for c in $cold_cases; do
    run env "$@" SLUICE_CONFORMANCE_TEST_TIMEOUT=60 timeout 90 "$program" --gtest_brief=1 --gtest_filter="$c" \
      > "$out/coldstart-$label-$c.log" 2>&1
    echo "$label $c: exit $? $(grep -m1 -oE 'blocked while the stream was held|has run for [0-9]+ s|every test that ran was skipped' "$out/coldstart-$label-$c.log")"
  done
}
if [[ -d .old ]]; then
  build_old "$out/coldstart-old-build.log" sluice-conformance-cuda ||
    { tail -20 "$out/coldstart-old-build.log"; status=1; }
  cold_each "old(${SLUICE_BASELINE_COMMIT:-.old})" build-gpu/old/tests/sluice-conformance-cuda
  cold_each "old(${SLUICE_BASELINE_COMMIT:-.old}),LAZY" build-gpu/old/tests/sluice-conformance-cuda \
    CUDA_MODULE_LOADING=LAZY
fi
hipnv=${SLUICE_HIPNV_DIR:-$root/.hipnv}
[[ $hipnv == /* ]] || hipnv=$root/$hipnv
built "$hipnv/bin/sluice-conformance-hip" &&
  cold_each hipnv,LAZY "$hipnv/bin/sluice-conformance-hip" "LD_LIBRARY_PATH=$hipnv/lib" \
    CUDA_MODULE_LOADING=LAZY
if built "$bin/bench/sluice-probe-module-loading"; then
  for how in sluice raw raw-setenv raw-first; do run "$bin/bench/sluice-probe-module-loading" "$how"; done 2>&1 |
    tee "$out/module-loading.txt"
fi
