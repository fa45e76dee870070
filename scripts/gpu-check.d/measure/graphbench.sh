# graphbench: sluice bench graph on this GPU, three runs: a launch against the eager enqueues and CUDA's own graph launch of the same program
#
# sluice-bench-graph-cuda (bench/graph.cpp): a 64-operation chain and a
# 4-branch diamond, each as sluice's launch, as the same calls made one by one
# and as cudaGraphLaunch of the same program captured by raw CUDA, in one run;
# its JSON and CSV files per run. Then the graph_timestep example.
step "graphbench: sluice-bench-graph-cuda, three runs"
for r in 1 2 3; do
  run timeout 200 "$bin/tools/sluice-bench-graph-cuda" --json="$out/graph-bench-cuda-$r.json" \
    --csv="$out/graph-bench-cuda-$r.csv" || status=1
done
run timeout 120 "$bin/examples/sluice-example-graph-timestep-cuda" --steps=1000 || status=1
