# baseline: an earlier commit's tree in .old/: its tests of SLUICE_BASELINE_FILTER and its api_overhead bench, before/after on one machine
#
# Knobs: SLUICE_BASELINE_FILTER='*IND_4*'  the tests of .old's suite
#        SLUICE_BASELINE_COMMIT             names .old's commit in the log
#        SLUICE_BENCH_RUNS, SLUICE_BENCH_BATCHES (measure/bench.sh)
# Not in the default steps. An earlier commit's tree in .old/ (ignored by
# git, carried: `git archive <commit> | tar -x -C .old`, with the tests to
# show copied in): its conformance suite built and run with
# SLUICE_BASELINE_FILTER (default: the IND-4 tests), and its api_overhead
# bench next to this tree's (before/after in one run, on one machine).
step "baseline: .old (${SLUICE_BASELINE_COMMIT:-commit not given}): ${SLUICE_BASELINE_FILTER:-*IND_4*}, api_overhead"
if [[ -d .old ]]; then
  build_old "$out/baseline-build.log" sluice-conformance-cuda sluice-bench-api-overhead ||
    { tail -20 "$out/baseline-build.log"; status=1; }
  # Each IND-4 test releases its own hold after 10 s (returns_while_held), so
  # a call that waits for the held stream fails the test instead of hanging.
  SLUICE_CONFORMANCE_TEST_TIMEOUT=120 run timeout 600 build-gpu/old/tests/sluice-conformance-cuda \
    --gtest_filter="${SLUICE_BASELINE_FILTER:-*IND_4*}" > "$out/baseline-conformance.log" 2>&1
  echo "baseline conformance exit $?"
  grep -E "^\[ +(OK|FAILED|SKIPPED) +\]|blocked|Failure" "$out/baseline-conformance.log" | head -40
  for run in $(seq 1 "${SLUICE_BENCH_RUNS:-1}"); do
    run build-gpu/old/bench/sluice-bench-api-overhead --batches="${SLUICE_BENCH_BATCHES:-300}" \
      --json="$out/api_overhead-before-$run.json" --markdown="$out/api_overhead-before-$run.md" > /dev/null ||
      status=1
    awk -F'|' 'NR > 2 {gsub(/ /, "", $2); gsub(/ /, "", $7); print "  before", $2, $7}' \
      "$out/api_overhead-before-$run.md" | head -40
  done
else
  echo "no .old/ here: nothing to compare"; status=1
fi
