# examples: the examples on the GPU, each with its overlap, its trace and `sluice trace report` of it
#
# dual_pipe, copy_compute, fan_out_in, two_gpu_pipeline and native_kernel
# (your own kernel on a stream's native handle), each with larger buffers than
# its ctest (label examples) and its trace in $OUT.
# The target: >= 80 % overlap of the shorter phase for dual_pipe and copy_compute on a GPU
# (--require-overlap=80: the example exits 1 below it).
step "examples (overlap)"
for name in dual-pipe copy-compute fan-out-in two-gpu-pipeline native-kernel; do
  args=(--mib=256)
  [[ $name == dual-pipe ]] && args=(--mib=1024)
  [[ $name == dual-pipe || $name == copy-compute ]] && args+=(--require-overlap=80)
  run timeout 120 "$bin/examples/sluice-example-$name-cuda" "${args[@]}" \
    --trace="$out/example-$name.trace.json"
  rc=$?
  # 77: the example needs more devices than this machine has (it says so).
  if [[ $rc -eq 77 ]]; then echo "($name: SKIPPED, not run here)"; elif [[ $rc -ne 0 ]]; then status=1; fi
  # What the trace (timing events on the device) says about the same run.
  if [[ $rc -eq 0 && -s "$out/example-$name.trace.json" ]]; then
    run "$bin/tools/sluice" trace report "$out/example-$name.trace.json" > "$out/example-$name.report.txt" 2>&1 ||
      status=1
    sed -n '1,40p' "$out/example-$name.report.txt"
  fi
done
