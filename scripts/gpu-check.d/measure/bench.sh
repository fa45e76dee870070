# bench: each sluice call against the raw CUDA call it wraps (api_overhead, its targeted rows), and tracing on vs off
#
# Knobs: SLUICE_BENCH_RUNS=1       whole api_overhead runs
#        SLUICE_BENCH_BATCHES=300  timed batches per op and side in each run
step "bench: api_overhead"
if built "$bin/bench/sluice-bench-api-overhead"; then
  # SLUICE_BENCH_RUNS (default 1) whole runs, one after another: the medians
  # move by tens of ns from run to run
  # (docs/results/runs/2026-11-23-api-overhead-h100.md).
  # 300 timed batches per side (the bench's default is 100): the diffs of
  # tens of ns that the targets turn on need the tighter medians.
  for run in $(seq 1 "${SLUICE_BENCH_RUNS:-1}"); do
    suffix=""; [[ $run -gt 1 ]] && suffix="-$run"
    run "$bin/bench/sluice-bench-api-overhead" --batches="${SLUICE_BENCH_BATCHES:-300}" \
      --json="$out/api_overhead$suffix.json" --markdown="$out/api_overhead$suffix.md" || status=1
  done
  # Per targeted row, diff (ns) and result of every run side by side.
  echo "targeted rows, diff ns and result per run:"
  for md in "$out"/api_overhead.md "$out"/api_overhead-*.md; do
    [[ -f $md ]] && awk -F'|' '$11 ~ /yes/ {gsub(/ /, "", $2); gsub(/ /, "", $7); gsub(/ /, "", $12); print $2, $7, $12}' "$md"
  done | awk '{d[$1] = d[$1] " " $2 " " $3; if (!($1 in o)) { o[$1] = n++; k[n - 1] = $1 }}
              END {for (i = 0; i < n; i++) printf "  %-26s%s\n", k[i], d[k[i]]}'
else
  echo "sluice-bench-api-overhead not built"; status=1
fi

step "bench: tracing on vs off"
# 1 GiB buffers: the workload rows move 64 MiB per step, as real work would.
run "$bin/bench/sluice-bench-trace-cost-cuda" --mib=1024 --json="$out/trace_cost.json" || status=1
