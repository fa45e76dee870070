# ctest: ctest labels conformance and unit, every built backend (not the cuda suite: the conformance step ran it)
#
# Knobs: SLUICE_CONFORMANCE_TEST_TIMEOUT (scripts/gpu-check)
step "ctest: conformance and unit tests of every built backend"
# (the cuda suite itself ran in the conformance step)
SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit run ctest --test-dir "$bin" --output-on-failure -L 'conformance|unit' -LE package -E 'conformance\.cuda' -j 4 \
  --timeout 120 || status=1
