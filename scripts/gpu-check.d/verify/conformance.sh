# conformance: every rule of docs/semantics.md on this machine, one verdict per rule (sluice conformance --backend cuda)
#
# `sluice conformance` writes the verdicts as conformance-cuda.md, .xml and
# .json; then the peer and cross-device tests again with the SM copy kernel
# taking the small pushes too.
# Knobs: SLUICE_CONFORMANCE_ROUNDS=1  whole-suite runs of `sluice conformance` (more: each a
#                                     fresh process; then as many with SLUICE_HOST_FUNC_PATH=signal,
#                                     a diagnosis)
#        SLUICE_CONFORMANCE_TEST_TIMEOUT (scripts/gpu-check)
step "conformance (sluice conformance --backend cuda)"
SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit run timeout 240 "$bin/tools/sluice" conformance --verbose --backend cuda --markdown "$out/conformance-cuda.md" \
  --junit "$out/conformance-cuda.xml" --json "$out/conformance-cuda.json" || status=1
# With SLUICE_CONFORMANCE_ROUNDS > 1: the whole suite through the tool
# SLUICE_CONFORMANCE_ROUNDS - 1 more times (each a fresh process; `sluice
# conformance`, the whole suite in one process, is where HOST-2's
# many-streams test failed under a rule that guessed which streams share a
# hardware queue: docs/results/runs/2026-11-26-host-function-path-history.md),
# then SLUICE_CONFORMANCE_ROUNDS with every host function forced onto the word
# watcher (SLUICE_HOST_FUNC_PATH=signal, what that rule did where it guessed
# wrong; a diagnosis, not counted): they pass if the runtime's
# hardware queues were the cause that backend_version() starting the engine
# first removed, and fail if a signal is held behind another stream's hold
# anyway (what the host_holds rule keeps away from the counted rounds). One
# line per round; the logs in the output folder.
rounds=${SLUICE_CONFORMANCE_ROUNDS:-1}
for mode in auto signal; do
  [[ $rounds -le 1 ]] && continue
  passed=0
  first=2
  [[ $mode == signal ]] && first=1
  for r in $(seq "$first" "$rounds"); do
    log=$out/conformance-cuda-$mode-$r.log
    SLUICE_HOST_FUNC_PATH=$mode SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit run timeout 240 \
      "$bin/tools/sluice" conformance --verbose --backend cuda > "$log" 2>&1
    rc=$?
    [[ $rc -eq 0 ]] && passed=$((passed + 1))
    echo "  $mode round $r: exit $rc; $(grep -hE '^[0-9]+ rules: ' "$log" | tail -1); $(grep -hE 'blocked host functions started|FAILED  \] [A-Z].*\(|has run for|fake cudart' "$log" | head -4 | tr '\n' ' ')"
    [[ $mode == auto && $rc -ne 0 ]] && status=1
  done
  echo "conformance: SLUICE_HOST_FUNC_PATH=$mode: $passed of $((rounds - first + 1)) more whole-suite rounds passed$([[ $mode == signal ]] && echo ' (diagnosis, not counted)')"
done

# The peer and cross-device tests again with sluice's SM copy kernel taking
# the aligned pushes up to 1 MiB as well (by default on CUDA it takes only
# pulls, up to 16 MiB: backends/cuda_hip/tuning/cuda.hpp).
step "conformance: peer and cross-device tests with SLUICE_PEER_SM_PUSH_MAX_KIB=1024"
SLUICE_PEER_SM_PUSH_MAX_KIB=1024 SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit run timeout 240 \
  "$bin/tests/sluice-conformance-cuda" --gtest_filter='PeerMultiDevice.*:*XDEV*' --gtest_brief=1 \
  > "$out/conformance-sm.log" 2>&1 || status=1
tail -5 "$out/conformance-sm.log"
