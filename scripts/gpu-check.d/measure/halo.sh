# halo: examples/halo_exchange with 2 ranks, one per GPU, under each engine (target: 80 % overlap), and sluice bench comm on the host backend
#
# Knobs: SLUICE_HALO_ARGS=--debug  more options for the halo_exchange runs
#        SLUICE_HALO_RUNS=1        runs of each halo_exchange case
#        SLUICE_HALO_ONLY=1        without the host-backend comm bench
#        SLUICE_MPIRUN_BIND        how mpirun places the 2 ranks (lib.sh, measure/commbench.sh)
# Not in the default steps. examples/halo_exchange with one rank
# per GPU (2 ranks: rank r on device r), cells in pinned memory, the
# stencil in host functions on the compute stream; then the host backend's
# `sluice bench comm` on this machine's otherwise idle CPU cores.
# Placed as SLUICE_MPIRUN_BIND says (--bind-to none by default).
step "halo: halo_exchange, 2 ranks, one per GPU; sluice bench comm on the host backend"
mpi=(mpirun --allow-run-as-root --oversubscribe -np 2 "${placement[@]}")
for run in $(seq 1 "${SLUICE_HALO_RUNS:-1}"); do
  suffix=""; [[ $run -gt 1 ]] && suffix="-$run"
  for engine in mpi nccl; do
    for cells in 1048576 8388608; do
      # shellcheck disable=SC2086  # SLUICE_HALO_ARGS splits into options on purpose
      run timeout 180 "${mpi[@]}" "$bin/examples/sluice-example-halo-exchange-cuda" --cells="$cells" --steps=40 \
        --engine="$engine" --require-overlap=80 ${SLUICE_HALO_ARGS:-} 2>&1 |
        tee "$out/halo-cuda-$engine-$cells$suffix.txt"
      [[ ${PIPESTATUS[0]} -ne 0 ]] && status=1
    done
  done
done
if [[ -z ${SLUICE_HALO_ONLY:-} ]] && built "$bin/tools/sluice-bench-comm-host"; then
  run timeout 300 "${mpi[@]}" "$bin/tools/sluice-bench-comm-host" --max-bytes=16777216 --trials=5 \
    --json="$out/comm-bench-host.json" --csv="$out/comm-bench-host.csv" 2>&1 | tee "$out/comm-bench-host.txt"
  [[ ${PIPESTATUS[0]} -ne 0 ]] && status=1
  # The 8 B rows again, each split into the enqueue (stream held) and the
  # drain (the engines alone): which bounds the loop on this machine.
  SLUICE_COMMBENCH_SPLIT=1 SLUICE_COMMBENCH_ENQUEUE=1 run timeout 120 "${mpi[@]}" \
    "$bin/tools/sluice-bench-comm-host" --max-bytes=8 --iters=2000 --trials=5 2>&1 |
    tee "$out/comm-bench-host-split.txt"
  [[ ${PIPESTATUS[0]} -ne 0 ]] && status=1
elif [[ -z ${SLUICE_HALO_ONLY:-} ]]; then
  echo "halo: sluice-bench-comm-host not built here (SLUICE_BUILD_BENCH?)"
  status=1
fi
