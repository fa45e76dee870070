# heldcalls: raw CUDA: which vendor calls block while one stream is held on a stream memory wait, and past which count
#
# Knobs: SLUICE_HELDCALLS_ARGS="--count=256"  more options for the probe
# Needs: probes (sluice-probe-held-calls)
# Not in the default steps. Raw CUDA: which vendor calls block while one
# stream is held on a stream memory wait, and past which count
# (bench/probes/held_calls/; about 1-2 minutes a run). Twice: with
# CUDA_DEVICE_MAX_CONNECTIONS unset (the driver's default) and with 32 (what
# sluice sets where it is unset). One line per case; the same as CSV in $out.
step "probe: which calls block while a stream is held (raw CUDA)"
if built "$bin/bench/sluice-probe-held-calls"; then
  for connections in unset 32; do
    echo "--- CUDA_DEVICE_MAX_CONNECTIONS=$connections"
    if [[ $connections == unset ]]; then run_env=(env -u CUDA_DEVICE_MAX_CONNECTIONS)
    else run_env=(env CUDA_DEVICE_MAX_CONNECTIONS="$connections"); fi
    # shellcheck disable=SC2086  # the extra options split on purpose
    run "${run_env[@]}" timeout 300 "$bin/bench/sluice-probe-held-calls" ${SLUICE_HELDCALLS_ARGS:-} \
      --csv="$out/held-calls-$connections.csv" 2>&1 | tee "$out/held-calls-$connections.txt" ||
      status=1
  done
else
  echo "sluice-probe-held-calls not built"; status=1
fi
