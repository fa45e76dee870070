# memops: raw CUDA 13 and 11.8: does a held stream hold a queue-mate's stream memory write, or its wait already satisfied?
#
# Knobs: SLUICE_MEMOPS_STREAMS=64  streams of the probe
#        SLUICE_HIPNV_DIR          where the CUDA 11.8 probe is (verify/hipnv.sh)
# Needs: probes (sluice-probe-channels)
# Not in the default steps. Raw CUDA: does a stream held on a stream memory
# wait hold a queue-mate's stream memory write, or its wait already
# satisfied (sluice's flags, host-function gates)? With CUDA 13's runtime and
# its stream memory operations (_v2), CUDA 11.8's first version asked of the
# same driver, and, where .hipnv has it (scripts/hip-nvidia-build), the probe
# built against CUDA 11.8's runtime, as sluice::hip runs on HIP's NVIDIA
# platform (docs/hip-nvidia.md: the churn failure).
step "probe: stream memory operations of a held stream's queue-mates (raw CUDA 13 and 11.8)"
probe11=${SLUICE_HIPNV_DIR:-.hipnv}/bin/sluice-probe-channels-cuda11
# memops_run LOG PROGRAM ARGS...: one probe run, its heading, fit and count.
memops_run() {
  local log=$1
  shift
  run env CUDA_DEVICE_MAX_CONNECTIONS=32 timeout 120 "$@" > "$log" 2>&1 || status=1
  head -1 "$log"
  sed -E 's/(fits:( [^ ]+){3}).*/\1 .../' "$log" | grep -E "fits"
  grep -c "tied to: [0-9]" "$log" | sed 's/^/streams held by another: /'
}
for memop in none write wait; do
  args=(--layouts=same --streams="${SLUICE_MEMOPS_STREAMS:-64}")
  [[ $memop != none ]] && args+=(--memop="$memop")
  for version in 12000 11080; do
    memops_run "$out/memops-$memop-$version.txt" "$bin/bench/sluice-probe-channels" "${args[@]}" \
      --memop-version=$version
  done
  built "$probe11" && memops_run "$out/memops-$memop-cuda11.txt" "$probe11" "${args[@]}"
done
