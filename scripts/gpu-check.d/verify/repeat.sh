# repeat: the Memory, Independence and HostFunctions tests, repeated; a hang is named by the watchdog and fails the step
#
# The tests that hung on the H100 (docs/conformance/README.md), repeated: a
# hang is named by the watchdog and fails the step.
# Knobs: SLUICE_REPEAT_ROUNDS=20  rounds
rounds=${SLUICE_REPEAT_ROUNDS:-20}
step "repeat: Memory, Independence and HostFunctions tests x$rounds"
SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit run timeout $((60 + 12 * rounds)) \
  "$bin/tests/sluice-conformance-cuda" --gtest_filter='Memory.*:Independence.*:HostFunctions.*' \
  --gtest_repeat="$rounds" --gtest_brief=1 > "$out/repeat.log" 2>&1
rc=$?
echo "exit $rc; $(grep -c 'PASSED' "$out/repeat.log") of $rounds rounds passed"
grep -E "has run for|FAILED  \] [A-Z].*\(" "$out/repeat.log" | head -5
[[ $rc -ne 0 ]] && status=1
