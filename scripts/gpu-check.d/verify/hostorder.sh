# hostorder: HOST-2 after the tests that come before it in the suite's order, in one process, round after round
#
# host_order_rounds (lib.sh) says why and how; then the host_path unit tests:
# which path host functions take.
# Knobs: SLUICE_HOSTORDER_ROUNDS=5  rounds (also of the hipnv step's same part)
step "hostorder: HOST-2 after the suite's preceding tests, ${SLUICE_HOSTORDER_ROUNDS:-5} rounds (sluice::cuda)"
host_order_rounds "$bin/tests/sluice-conformance-cuda" cuda env || status=1
# Which path host functions take (tests/unit/host_path_test.cpp), where built.
if built "$bin/tests/unit/sluice-host_path-tests-cuda"; then
  run timeout 120 "$bin/tests/unit/sluice-host_path-tests-cuda" --gtest_brief=1 > "$out/host-path.log" 2>&1 ||
    status=1
  echo "host_path unit tests: $(grep -hE '^\[  (PASSED|FAILED) ' "$out/host-path.log" | tr '\n' ' ')"
fi
