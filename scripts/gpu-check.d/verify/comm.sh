# comm: sluice::comm's COMM-1..7 with 2 ranks, one GPU each, under each engine (mpi, nccl)
#
# Not in the default steps.
# Knobs: SLUICE_COMM_ENGINES="mpi nccl"  the engines (SLUICE_COMM_ENGINE of tests/comm)
#        NCCL_DEBUG=WARN                 NCCL's own logging in the whole-suite runs
# sluice::comm's COMM-1..7 (tests/comm) with 2 ranks, one GPU each: rank r
# sees GPU r % count first (its device 0, the communicator's), the other
# GPUs after it (COMM-6 names device 1 as the wrong device), under each
# engine. Open MPI's mpirun is not CUDA-aware here: the mpi engine stages
# device buffers through pinned memory; the nccl engine is NCCL's.
step "comm: COMM-1..7, 2 ranks, one GPU each, engines ${SLUICE_COMM_ENGINES:-mpi nccl}"
ngpu=$(run nvidia-smi -L 2>/dev/null | grep -c '^GPU')
[[ $ngpu -ge 1 ]] || ngpu=1
echo "GPUs: $ngpu"
if ! built "$bin/tests/comm/sluice-comm-cuda"; then
  echo "comm: $bin/tests/comm/sluice-comm-cuda was not built (MPI not found?)"
  status=1
else
  grep -E "sluice::comm" "$out/build.log" | head -3
  # comm_run LOG LIMIT [VAR=VALUE...] -- [test options...]: the COMM program
  # under mpirun, 2 ranks, one GPU each, the variables given to both ranks.
  comm_run() {
    local log=$1 limit=$2 vars=() names=(-x SLUICE_GPU_COUNT)
    shift 2
    while [[ $# -gt 0 && $1 != -- ]]; do vars+=("$1"); names+=(-x "${1%%=*}"); shift; done
    shift
    run env "${vars[@]}" SLUICE_GPU_COUNT="$ngpu" timeout "$limit" mpirun --allow-run-as-root -np 2 \
      --bind-to none "${names[@]}" bash -c "$rank_gpus" rank "$bin/tests/comm/sluice-comm-cuda" \
      --gtest_brief=1 "$@" > "$log" 2>&1
  }
  hang_env=()
  [[ -n ${SLUICE_CONFORMANCE_HANG_COMMAND:-} ]] &&
    hang_env=(SLUICE_CONFORMANCE_HANG_COMMAND="$SLUICE_CONFORMANCE_HANG_COMMAND")
  # The whole suite under each engine. nccl: with its default lanes
  # (docs/comm.md "The nccl engine"); then COMM-3 with one lane per kind,
  # which must fail (an operation that waits for its peer holds the later
  # ones of its NCCL communicator), as in CI against the simulated NCCL.
  # SLUICE_COMM_TEST_PROGRESS: COMM-6's cases name themselves on stderr.
  for engine in ${SLUICE_COMM_ENGINES:-mpi nccl}; do
    # COMM-2's first-contact test alone first: a fresh process, so the
    # send is the first message between the two ranks, sent while the
    # receiver has made no call (NCCL's connections, which wait for the
    # peer, must have been made when the communicator was created).
    t='*COMM_2__a_first_send_returns_before_the_peer_calls_anything'
    comm_run "$out/comm-$engine-first-contact.log" 120 SLUICE_COMM_ENGINE="$engine" \
      SLUICE_COMM_TIMEOUT_S=30 SLUICE_CONFORMANCE_TEST_TIMEOUT=60 -- "--gtest_filter=$t"
    rc=$?
    echo "comm ($engine, ${t:1} alone: first contact): exit $rc"
    [[ $rc -ne 0 ]] && { status=1; grep -E "Failure|waited|FAILED" "$out/comm-$engine-first-contact.log" | head -5; }
    start_s=$SECONDS
    comm_run "$out/comm-$engine.log" 600 SLUICE_COMM_ENGINE="$engine" SLUICE_COMM_TIMEOUT_S=5 \
      SLUICE_CONFORMANCE_TEST_TIMEOUT="$conformance_test_limit" NCCL_DEBUG="${NCCL_DEBUG:-WARN}" \
      SLUICE_COMM_TEST_PROGRESS=1 "${hang_env[@]}" -- --markdown="$out/comm-$engine.md"
    rc=$?
    echo "comm ($engine): exit $rc after $((SECONDS - start_s)) s"
    [[ $rc -ne 0 ]] && status=1
    grep -E "engine|COMM-[0-9] |rules|CUDA_VISIBLE|NCCL WARN|FAILED|Failure" "$out/comm-$engine.log" | head -30
    [[ $rc -ne 0 ]] && tail -5 "$out/comm-$engine.log"
    if [[ $engine == nccl ]]; then
      t='*COMM_3__a_waiting_operation_holds_only_its_own_stream'
      comm_run "$out/comm-nccl-one-lane-COMM_3.log" 120 SLUICE_COMM_ENGINE=nccl SLUICE_COMM_NCCL_LANES=1 \
        SLUICE_COMM_TIMEOUT_S=5 SLUICE_CONFORMANCE_TEST_TIMEOUT=30 -- "--gtest_filter=$t"
      rc=$?
      echo "comm (nccl, SLUICE_COMM_NCCL_LANES=1, ${t:1}): exit $rc (must fail: one NCCL communicator per kind and direction)"
      [[ $rc -eq 0 ]] && status=1
    fi
  done
fi
