# commtrace: sluice::comm in a trace on the CUDA backend: 2 ranks traced, `sluice trace report` of both on one timeline
#
# Not in the default steps. docs/comm.md "Tracing": tests/comm/trace_check.cmake
# runs the 2 ranks with SLUICE_TRACE, one file per rank with every operation as
# a comm span, and the report of both (with a PNG), in $OUT/comm-trace.
step "commtrace: 2 ranks of sluice-comm-trace-cuda traced, sluice trace report of both"
if built "$bin/tests/comm/sluice-comm-trace-cuda" && command -v mpirun >/dev/null; then
  run timeout 300 cmake -DMPIEXEC="$(command -v mpirun)" -DPROGRAM="$bin/tests/comm/sluice-comm-trace-cuda" \
    -DSLUICE="$bin/tools/sluice" -DGPU_BACKEND=1 -DDIR="$out/comm-trace" -P tests/comm/trace_check.cmake \
    > "$out/comm-trace.log" 2>&1 || status=1
  tail -40 "$out/comm-trace.log"
else
  echo "commtrace: sluice-comm-trace-cuda not built (no MPI found?) or no mpirun"
  status=1
fi
