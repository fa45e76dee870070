# staging: the staged peer-copy pipeline and the batched copies on one device, next to the raw copies they are made of
#
# Needs: probes (sluice-probe-staging, sluice-probe-batch)
# The staged peer-copy pipeline on one device next to the raw copies it is
# made of (bench/probes/staging_probe.cpp): how close it comes to the PCIe link.
step "staging: sluice-probe-staging (one device), 8 MiB slots (default), 2 MiB and 32 MiB"
for kib in "" 2048 32768; do
  run env ${kib:+SLUICE_STAGING_CHUNK_KIB=$kib} timeout 200 "$bin/bench/sluice-probe-staging" --trials=5 ||
    status=1
done
# 64 pieces of 16 KiB at once on one device (bench/probes/batch_probe.cpp): 64 raw
# cudaMemcpyPeerAsync calls against the batched paths; and 16 pieces of 64 KiB.
step "staging: sluice-probe-batch (one device)"
run timeout 120 "$bin/bench/sluice-probe-batch" --trials=200 || status=1
run timeout 120 "$bin/bench/sluice-probe-batch" --trials=200 --pieces=16 --kib=64 || status=1
