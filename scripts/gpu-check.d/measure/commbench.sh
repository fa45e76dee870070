# commbench: sluice::comm next to its raw counterpart in one run (sluice bench comm), 2 ranks, one per GPU, mpi and nccl engines
#
# Knobs: SLUICE_COMMBENCH_ENGINES="mpi nccl"        the engines
#        SLUICE_COMMBENCH_MPI_MAX_BYTES=268435456   largest size of the mpi run
#        SLUICE_COMMBENCH_NCCL_MAX_BYTES=1073741824 largest size of the nccl run
#        SLUICE_COMMBENCH_MIN_BYTES=8               smallest size
#        SLUICE_COMMBENCH_TRIALS=3                  trials per side and size
#        SLUICE_COMMBENCH_MPI_PIECES="default 0 default/1"  the mpi run once per
#                                   SLUICE_COMM_PIECE_BYTES (default: the library's own),
#                                   /N: with SLUICE_COMM_PIECES_IN_FLIGHT=N
#        SLUICE_COMMBENCH_RANKS=2                   ranks (1: each side's own cost per
#                                   operation in one process, nothing crosses processes)
#        SLUICE_COMMBENCH_OPS=...                   its --ops (default: the bench's, all four)
#        SLUICE_COMMBENCH_RUNS=1                    runs of each engine; with an earlier
#                                   commit's tree in .old/ (as for the baseline step) each run
#                                   is followed by .old's bench built there: before/after
#        SLUICE_BASELINE_COMMIT                     names .old's commit in the log
#        SLUICE_MPIRUN_BIND="--bind-to none"        how mpirun places the ranks (lib.sh; e.g.
#                                   "--map-by numa --bind-to numa": each rank on its own NUMA
#                                   node's cores, threads free within them)
# Not in the default steps. sluice::comm next to its raw counterpart in one
# run (bench/comm.cpp, docs/comm.md "sluice bench comm"): 2 ranks, one per
# GPU (rank % GPUs; each rank prints its device), device buffers. The mpi
# engine (sluice stages through pinned memory; raw: the hand-written loop
# cudaMemcpyAsync to pinned, synchronize, blocking MPI, copy back,
# synchronize), then the nccl engine (raw: NCCL on its own communicator and
# stream, as nccl-tests). Exit 77: the engine or raw NCCL is not in this
# build (reported, no rows). Placed as SLUICE_MPIRUN_BIND says.
ranks=${SLUICE_COMMBENCH_RANKS:-2}
step "commbench: sluice bench comm, mpirun -np $ranks, one rank per GPU: mpi engine (device buffers) and nccl engine"
comm_bench=$bin/tools/sluice-bench-comm-cuda
old_bench=
if [[ -d .old ]]; then
  # Before/after: .old's bench built here too (SLUICE_BASELINE_COMMIT names it).
  echo "commbench: .old (${SLUICE_BASELINE_COMMIT:-commit not given}) runs after each run of this tree"
  if build_old "$out/commbench-old-build.log" sluice-bench-comm-cuda; then
    old_bench=build-gpu/old/tools/sluice-bench-comm-cuda
  else
    tail -20 "$out/commbench-old-build.log"; status=1
  fi
fi
ops=(); [[ -n ${SLUICE_COMMBENCH_OPS:-} ]] && ops=(--ops="$SLUICE_COMMBENCH_OPS")
if built "$comm_bench"; then
  gpus=$(run nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  [[ $gpus -ge 2 ]] || echo "commbench: $gpus GPU(s) here: both ranks use device 0"
  png_ok=1
  command -v gnuplot >/dev/null || { png_ok=0; echo "commbench: no gnuplot here: no PNGs"; }
  # The mpi engine once per SLUICE_COMMBENCH_MPI_PIECES value (its
  # SLUICE_COMM_PIECE_BYTES; "default": the library's; files
  # commbench-mpi-pieces<N>.* for the others), so that pieces and whole
  # messages compare on one machine.
  for engine in ${SLUICE_COMMBENCH_ENGINES:-mpi nccl}; do
    variants=default
    if [[ $engine == mpi ]]; then max=${SLUICE_COMMBENCH_MPI_MAX_BYTES:-268435456}
      variants=${SLUICE_COMMBENCH_MPI_PIECES:-default}
    else max=${SLUICE_COMMBENCH_NCCL_MAX_BYTES:-1073741824}; fi
    for variant in $variants; do
      # <piece bytes>[/<pieces in flight>]: "default/1" is the library's
      # piece size with SLUICE_COMM_PIECES_IN_FLIGHT=1.
      pieces=${variant%%/*}; in_flight=; [[ $variant == */* ]] && in_flight=${variant#*/}
      name=$engine; piece_env=()
      if [[ $pieces != default ]]; then name=$engine-pieces$pieces; piece_env=(SLUICE_COMM_PIECE_BYTES="$pieces"); fi
      if [[ -n $in_flight ]]; then name=$name-inflight$in_flight; piece_env+=(SLUICE_COMM_PIECES_IN_FLIGHT="$in_flight"); fi
      runs=${SLUICE_COMMBENCH_RUNS:-1}
      for run in $(seq 1 "$runs"); do
        for which in this old; do
          program=$comm_bench; file=$name
          if [[ $which == old ]]; then
            [[ -n $old_bench ]] || continue
            program=$old_bench; file=$name-old
          fi
          [[ $runs -gt 1 ]] && file=$file-$run
          png=(); [[ $png_ok -eq 1 ]] && png=(--png="$out/commbench-$file.png")
          echo "commbench: $file ($program)"
          run env "${piece_env[@]}" timeout 300 mpirun --allow-run-as-root --oversubscribe -np "$ranks" \
            "${placement[@]}" "$program" --engine="$engine" --buffers=device "${ops[@]}" \
            --min-bytes="${SLUICE_COMMBENCH_MIN_BYTES:-8}" --max-bytes="$max" \
            --trials="${SLUICE_COMMBENCH_TRIALS:-3}" --json="$out/commbench-$file.json" \
            --csv="$out/commbench-$file.csv" "${png[@]}" > "$out/commbench-$file.log" 2>&1
          rc=$?
          cat "$out/commbench-$file.log"
          if [[ $rc -eq 77 ]]; then
            echo "commbench: $file: not in this build (SKIPPED, no rows; the log says why)"
          elif [[ $rc -ne 0 ]]; then
            echo "commbench: $file: FAILED (exit $rc)"; status=1
          fi
        done
      done
    done
  done
else
  echo "commbench: $comm_bench was not built (sluice::comm needs MPI: configure's log says)"; status=1
fi
