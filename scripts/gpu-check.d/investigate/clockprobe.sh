# clockprobe: raw CUDA's event clock against the host's steady clock over a minute, and the same span through sluice's tracer
#
# Knobs: SLUICE_CLOCK_SECONDS=60  how long it samples
# Needs: probes (sluice-probe-clock)
# Not in the default steps (it takes a minute). Raw CUDA: how event times map
# onto the host's steady clock over a long trace (drift; the resolution of
# cudaEventElapsedTime's float as the time since the base grows).
step "probe: CUDA event clock against the host clock (raw CUDA)"
if built "$bin/bench/sluice-probe-clock"; then
  secs=${SLUICE_CLOCK_SECONDS:-60}
  run timeout $((secs + 60)) "$bin/bench/sluice-probe-clock" --seconds="$secs" --interval-ms=2000 2>&1 |
    tee "$out/clock-probe.txt" || status=1
fi
# The same span through sluice's tracer: a fill between two host functions,
# $secs s into a trace, shown between them (tests/unit/trace_test.cpp).
if built "$bin/tests/unit/sluice-trace-tests-cuda"; then
  SLUICE_TEST_TRACE_SECONDS=$secs run timeout $((secs + 60)) "$bin/tests/unit/sluice-trace-tests-cuda" \
    --gtest_filter='Trace.DeviceTimesStayOnTheHostClockThroughALongTrace' 2>&1 |
    tee "$out/trace-long.txt" || status=1
fi
