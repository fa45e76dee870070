# channels: raw CUDA: which streams share a hardware queue, with 32 connections (what sluice sets) and unset
#
# Knobs: SLUICE_CHANNELS_ARGS  more options for the probe
# Needs: probes (sluice-probe-channels)
# Not in the default steps. Raw CUDA: which streams share a hardware queue
# (bench/probes/channel_probe.cpp), with 32 connections (what sluice sets) and unset.
step "probe: which streams share a hardware queue (raw CUDA)"
for connections in 32 unset; do
  if [[ $connections == unset ]]; then run_env=(env -u CUDA_DEVICE_MAX_CONNECTIONS)
  else run_env=(env CUDA_DEVICE_MAX_CONNECTIONS="$connections"); fi
  for work in "" --memset; do
    # shellcheck disable=SC2086  # $work and the extra options split on purpose
    run "${run_env[@]}" timeout 120 "$bin/bench/sluice-probe-channels" $work ${SLUICE_CHANNELS_ARGS:-} \
      > "$out/channels-$connections$work.txt" 2>&1 || status=1
    # The smallest modulus that fits says most: print the first three.
    sed -E 's/(fits:( [^ ]+){3}).*/\1 .../' "$out/channels-$connections$work.txt" | grep -E "fits|^sluice"
  done
done
