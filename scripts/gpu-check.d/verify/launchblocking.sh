# launchblocking: the conformance suite and the cold-start tests with CUDA_LAUNCH_BLOCKING=1, one process per family
#
# Not in the default steps. The conformance suite with CUDA_LAUNCH_BLOCKING=1,
# which users set to debug (sluice takes the signal path for host functions
# there), one process per family (a hang stops only its family: the
# watchdog names it), SLUICE_SANITIZER_JOBS at a time; then the cold-start
# tests the same way. With CUDA_LAUNCH_BLOCKING=1 CUDA itself makes a fill or
# a device-to-device copy enqueued behind a held stream wait for the stream
# (sluice-probe-held-calls --cases=enqueue_held_stream), so a test that
# enqueues one behind a hold it releases later can wait for itself.
# Knobs: SLUICE_SANITIZER_JOBS=8  families run at once
step "launchblocking: the conformance suite with CUDA_LAUNCH_BLOCKING=1, one process per family"
CUDA_LAUNCH_BLOCKING=1 run "$bin/tools/sluice-cuda" info 2>&1 | grep -E '^ *host functions:'
lb_one() {  # family
  local flog="$out/launch-blocking-$1.log" rc
  CUDA_LAUNCH_BLOCKING=1 SLUICE_CONFORMANCE_TEST_TIMEOUT=30 SLUICE_CONFORMANCE_ALLOWED_SKIPS='*MultiDevice.*' \
    run timeout 120 "$bin/tests/sluice-conformance-cuda" --gtest_brief=1 --gtest_filter="${1}*" > "$flog" 2>&1
  rc=$?
  echo "CUDA_LAUNCH_BLOCKING=1 $1: exit $rc, $(grep -cE '^\[  FAILED  \] [A-Za-z].*\(' "$flog") failed$(grep -m1 -oE '[A-Za-z_.0-9]+ has run for [0-9]+ s' "$flog" | sed 's/^/; hung: /')$(grep -m1 -oE '[0-9]+ tests? from [0-9]+ test suites? ran' "$flog" | sed 's/^/, /')"
}
export -f lb_one
export out bin
# shellcheck disable=SC2016  # "$0" is the child bash's
for family in ColdStart Errors Events HostFunctions Independence Lifetimes Memory Native Ordering Peer Priorities Xdev; do
  echo "$family"
done | xargs -P "${SLUICE_SANITIZER_JOBS:-8}" -L 1 bash -c 'lb_one "$0"' | sort | tee "$out/launch-blocking.log"
grep -qv ': exit 0,' "$out/launch-blocking.log" && status=1
CUDA_LAUNCH_BLOCKING=1 run ctest --test-dir "$bin" -L cold -R 'conformance\.cuda' --timeout 120 2>&1 |
  grep -E "Test +#|tests passed" || status=1
