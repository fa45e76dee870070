# probe: raw CUDA: how deep a held stream's queue is per kind of operation, with 32, 8 and 1 connections
#
# docs/design.md, "Host-function batches and queue depth".
# Needs: probes (sluice-probe-queue-depth)
step "probe: queue depth of a held stream"
if built "$bin/bench/sluice-probe-queue-depth"; then
  run timeout 120 "$bin/bench/sluice-probe-queue-depth" || status=1
  for connections in 8 1; do
    echo "--- CUDA_DEVICE_MAX_CONNECTIONS=$connections"
    CUDA_DEVICE_MAX_CONNECTIONS=$connections run timeout 120 "$bin/bench/sluice-probe-queue-depth" || status=1
  done
fi
