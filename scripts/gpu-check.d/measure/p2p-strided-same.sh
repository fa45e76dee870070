# p2p-strided-same: the faces of cubes of doubles (64^3-512^3) within one GPU, sluice's strided copy_peer (path local) and six-face copy_peer_batch next to raw cudaMemcpy3DAsync and a pack/copy/unpack (sluice bench p2p --strided --same-device)
#
# Knobs: SLUICE_P2P_STRIDED_MAX_SIDE=512  largest cube side
#        SLUICE_P2P_STRIDED_TRIALS=5      trials per method and row
# Not in the default steps. One GPU (device 0). The verdict lines are the
# two-GPU step's targets read for one device (printed, not the status); the
# step fails only on a data check or a crash.
step "p2p-strided-same: strided faces within one GPU, sluice next to raw cudaMemcpy3DAsync"
if built "$bin/tools/sluice-bench-p2p-strided-cuda"; then
  run timeout 300 "$bin/tools/sluice" --backend cuda bench p2p --strided --same-device \
    --max-side="${SLUICE_P2P_STRIDED_MAX_SIDE:-512}" --trials="${SLUICE_P2P_STRIDED_TRIALS:-5}" \
    --json="$out/p2p-strided-same.json" --csv="$out/p2p-strided-same.csv" 2>&1 |
    tee "$out/p2p-strided-same.txt"
  [[ ${PIPESTATUS[0]} -ne 0 ]] && status=1
else
  echo "p2p-strided-same: $bin/tools/sluice-bench-p2p-strided-cuda was not built"; status=1
fi
