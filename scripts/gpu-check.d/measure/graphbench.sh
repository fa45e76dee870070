# graphbench: sluice bench graph on this GPU, three runs: a launch against the eager enqueues and CUDA's own graph launch of the same program
#
# sluice-bench-graph-cuda (bench/graph.cpp): a 64-operation chain and a
# 4-branch diamond, each as sluice's launch, as the same calls made one by one
# and as cudaGraphLaunch of the same program captured by raw CUDA, in one run;
# its JSON and CSV files per run; on CUDA also 64 tiny kernels on a native
# handle. Then the graph_timestep example. With the programs of
# SLUICE_HIPNV_DIR (default .hipnv), sluice::hip's on HIP's NVIDIA platform
# too (sluice's replay there).
step "graphbench: sluice-bench-graph-cuda, three runs"
for r in 1 2 3; do
  run timeout 200 "$bin/tools/sluice-bench-graph-cuda" --json="$out/graph-bench-cuda-$r.json" \
    --csv="$out/graph-bench-cuda-$r.csv" || status=1
done
run timeout 120 "$bin/examples/sluice-example-graph-timestep-cuda" --steps=1000 || status=1
hipnv=${SLUICE_HIPNV_DIR:-$root/.hipnv}
if [[ -x $hipnv/bin/sluice-bench-graph-hip ]]; then
  step "graphbench: sluice-bench-graph-hip on HIP's NVIDIA platform, one run"
  run timeout 200 "$hipnv/bin/sluice-bench-graph-hip" --json="$out/graph-bench-hipnv.json" \
    --csv="$out/graph-bench-hipnv.csv" || status=1
  run timeout 120 "$hipnv/bin/sluice-example-graph-timestep-hip" --steps=1000 || status=1
fi
