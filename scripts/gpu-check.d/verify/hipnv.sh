# hipnv: sluice::hip on HIP's NVIDIA platform, programs built elsewhere by scripts/hip-nvidia-build: the suite, unit tests, stress, examples, p2p, comm
#
# Knobs: SLUICE_HIPNV_DIR=DIR              the programs: sluice::hip built for HIP's NVIDIA
#                                          platform by scripts/hip-nvidia-build elsewhere and
#                                          carried here (default .hipnv); docs/hip-nvidia.md
#        SLUICE_HIPNV_STRESS_OPS=1000000   operations of the stress run
#        SLUICE_HIPNV_ONLY=comm            the comm part alone (COMM-1..7)
#        SLUICE_HOSTORDER_ROUNDS=5         rounds of its hostorder part
#        SLUICE_P2P_MAX_MIB=1024           largest copy of its P2P bench
# Not in the default steps. sluice::hip on HIP's NVIDIA platform (HIP 5.2's
# headers over CUDA 11.8, cudart linked in statically): built elsewhere by
# scripts/hip-nvidia-build and carried here in SLUICE_HIPNV_DIR (this machine
# has neither HIP nor CUDA 11.8). What it checks is sluice's HIP code over
# HIP's CUDA mapping, not ROCm (docs/hip-nvidia.md). The conformance suite
# with verdicts (conformance-hip-nvidia.json/.md/.xml), the peer and
# cross-device tests again with sluice's SM copy kernel on, the GPU unit
# tests, the stress test, the examples, the P2P bench (sluice vs raw HIP in
# one run), and sluice::comm's COMM suite with the mpi engine, one GPU per rank.
hipnv=${SLUICE_HIPNV_DIR:-$root/.hipnv}
[[ $hipnv == /* ]] || hipnv=$root/$hipnv
hbin=$hipnv/bin
step "hipnv: sluice::hip on HIP's NVIDIA platform ($hipnv)"
if ! built "$hbin/sluice-hip"; then
  echo "hipnv: no $hbin/sluice-hip: run scripts/hip-nvidia-build where HIP and CUDA 11.8 are, and carry its directory"
  status=1
else
  # Only the carried simdjson beyond libc and libstdc++, and this machine's Open
  # MPI for sluice-comm-hip (scripts/hip-nvidia-build checked).
  henv=(env "LD_LIBRARY_PATH=$hipnv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}")
  cp "$hipnv/BUILD.txt" "$out/hipnv-build.txt" 2>/dev/null && cat "$out/hipnv-build.txt"
  run "${henv[@]}" "$hbin/sluice" --backend hip info 2>&1 | tee "$out/hipnv-info.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

  # SLUICE_HIPNV_ONLY=comm: the comm part alone (after the info).
  if [[ ${SLUICE_HIPNV_ONLY:-} != comm ]]; then
    step "hipnv: conformance (sluice conformance --backend hip)"
    SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit run "${henv[@]}" timeout 240 "$hbin/sluice" \
      conformance --verbose --backend hip --markdown "$out/conformance-hip-nvidia.md" \
      --junit "$out/conformance-hip-nvidia.xml" --json "$out/conformance-hip-nvidia.json" \
      > "$out/hipnv-conformance.log" 2>&1 || status=1
    grep -vE '^\[ +(RUN|OK) +\]' "$out/hipnv-conformance.log" | tail -70

    step "hipnv: peer and cross-device tests with the SM copy kernel on (SLUICE_PEER_SM_MAX_KIB=1024)"
    SLUICE_PEER_SM_MAX_KIB=1024 SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit run "${henv[@]}" \
      timeout 240 "$hbin/sluice-conformance-hip" --gtest_filter='PeerMultiDevice.*:*XDEV*' --gtest_brief=1 \
      > "$out/hipnv-conformance-sm.log" 2>&1 || status=1
    tail -5 "$out/hipnv-conformance-sm.log"

    step "hipnv: HOST-2 after the suite's preceding tests, ${SLUICE_HOSTORDER_ROUNDS:-5} rounds"
    host_order_rounds "$hbin/sluice-conformance-hip" hip-nvidia "${henv[@]}" || status=1

    step "hipnv: GPU unit tests of sluice::hip"
    for part in sm-copy staging trace names diagnose host_path; do
      exe=$hbin/sluice-$part-tests-hip
      built "$exe" || { echo "hipnv: $exe missing"; status=1; continue; }
      run_env=()
      [[ $part == diagnose ]] && run_env=(SLUICE_DIAGNOSE=1)
      run env "${run_env[@]}" "${henv[@]}" timeout 300 "$exe" --gtest_brief=1 > "$out/hipnv-unit-$part.log" 2>&1
      rc=$?
      echo "unit $part: exit $rc; $(grep -E '^\[  (PASSED|FAILED)  \]|tests? (ran|skipped)' "$out/hipnv-unit-$part.log" | tr '\n' ' ')"
      [[ $rc -ne 0 ]] && status=1
    done

    step "hipnv: stress, ${SLUICE_HIPNV_STRESS_OPS:-1000000} operations, 64 streams, up to 4 devices, 16 threads; --churn"
    run "${henv[@]}" timeout 300 "$hbin/sluice-stress-hip" --ops="${SLUICE_HIPNV_STRESS_OPS:-1000000}" \
      --streams=64 --devices=4 --threads=16 2>&1 | tee "$out/hipnv-stress.log" | tail -15
    [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
    run "${henv[@]}" timeout 300 "$hbin/sluice-stress-hip" --churn --rounds=20 --devices=4 --threads=4 2>&1 |
      tee "$out/hipnv-stress-churn.log" | tail -3
    [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1

    step "hipnv: examples (overlap)"
    for name in dual-pipe copy-compute fan-out-in two-gpu-pipeline; do
      args=(--mib=256)
      [[ $name == dual-pipe ]] && args=(--mib=1024)
      [[ $name == dual-pipe || $name == copy-compute ]] && args+=(--require-overlap=80)
      run "${henv[@]}" timeout 120 "$hbin/sluice-example-$name-hip" "${args[@]}" \
        --trace="$out/hipnv-example-$name.trace.json" 2>&1 | tee "$out/hipnv-example-$name.log"
      rc=${PIPESTATUS[0]}
      if [[ $rc -eq 77 ]]; then echo "($name: SKIPPED, not run here)"; elif [[ $rc -ne 0 ]]; then status=1; fi
      if [[ $rc -eq 0 && -s "$out/hipnv-example-$name.trace.json" ]]; then
        run "${henv[@]}" "$hbin/sluice" trace report "$out/hipnv-example-$name.trace.json" \
          > "$out/hipnv-example-$name.report.txt" 2>&1 || status=1
        sed -n '1,25p' "$out/hipnv-example-$name.report.txt"
      fi
    done

    step "hipnv: p2p (sluice --backend hip bench p2p: sluice vs raw HIP)"
    run "${henv[@]}" timeout 300 "$hbin/sluice" --backend hip bench p2p --max-mib="${SLUICE_P2P_MAX_MIB:-1024}" \
      --trials=5 --json="$out/p2p-hip-nvidia.json" --csv="$out/p2p-hip-nvidia.csv"
    rc=$?
    [[ $rc -ne 0 && $rc -ne 77 ]] && status=1
    if [[ -s "$out/p2p-hip-nvidia.csv" ]] && command -v gnuplot >/dev/null; then
      run scripts/p2p-plot "$out/p2p-hip-nvidia.csv" "$out/p2p-hip-nvidia" || status=1
    fi
  fi

  # CUDA: 2 ranks, one GPU each (CUDA_VISIBLE_DEVICES: on HIP's NVIDIA
  # platform the runtime is CUDA's), the mpi engine (device buffers staged
  # through pinned memory; the machine's Open MPI, not carried: the program
  # needs its libmpi.so.40). Exit 77: a rank saw no device (a failure here).
  step "hipnv: comm (COMM-1..7 on sluice::hip, mpi engine, 2 ranks, one GPU each)"
  if ! built "$hbin/sluice-comm-hip"; then
    echo "hipnv: no $hbin/sluice-comm-hip (carried from before scripts/hip-nvidia-build built it): comm SKIPPED"
  elif ! command -v mpirun >/dev/null; then
    echo "hipnv: no mpirun on this machine: comm SKIPPED"
  else
    ngpu=$(run nvidia-smi -L 2>/dev/null | grep -c '^GPU')
    [[ $ngpu -ge 1 ]] || ngpu=1
    echo "GPUs: $ngpu"
    hang_env=()
    [[ -n ${SLUICE_CONFORMANCE_HANG_COMMAND:-} ]] && hang_env=(-x SLUICE_CONFORMANCE_HANG_COMMAND)
    start_s=$SECONDS
    SLUICE_COMM_ENGINE=mpi SLUICE_COMM_TIMEOUT_S=5 SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit \
      SLUICE_GPU_COUNT=$ngpu SLUICE_COMM_TEST_PROGRESS=1 run "${henv[@]}" \
      timeout 600 mpirun --allow-run-as-root -np 2 --bind-to none \
        -x LD_LIBRARY_PATH -x SLUICE_COMM_ENGINE -x SLUICE_COMM_TIMEOUT_S -x SLUICE_CONFORMANCE_TEST_TIMEOUT \
        -x SLUICE_GPU_COUNT -x SLUICE_COMM_TEST_PROGRESS "${hang_env[@]}" \
        bash -c "$rank_gpus" \
        rank "$hbin/sluice-comm-hip" --gtest_brief=1 --markdown="$out/comm-hip-nvidia-mpi.md" \
        > "$out/hipnv-comm-mpi.log" 2>&1
    rc=$?
    echo "comm on hip (mpi): exit $rc after $((SECONDS - start_s)) s"
    [[ $rc -ne 0 ]] && status=1
    grep -E "engine|COMM-[0-9] |rules|CUDA_VISIBLE|no HIP device|FAILED|Failure" "$out/hipnv-comm-mpi.log" | head -30
    [[ $rc -ne 0 ]] && tail -5 "$out/hipnv-comm-mpi.log"
  fi
fi
