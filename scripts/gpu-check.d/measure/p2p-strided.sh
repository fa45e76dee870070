# p2p-strided: the faces of cubes of doubles (64^3-512^3) between two GPUs, sluice's strided copy_peer and six-face copy_peer_batch next to raw cudaMemcpy3DPeerAsync and a pack kernel + peer copy + unpack kernel (sluice bench p2p --strided)
#
# Knobs: SLUICE_P2P_STRIDED_MAX_SIDE=512  largest cube side
#        SLUICE_P2P_STRIDED_TRIALS=5      trials per method and row
# Not in the default steps. Needs 2 GPUs: on one the bench exits 77 and the
# step says so and passes. The output ends with the three verdicts (sluice
# >= 0.95x the best raw method for faces of 1 MiB or more, >= 2x raw
# cudaMemcpy3DPeerAsync for faces of 256 KiB or less, the six-face batch >= 3x
# six raw calls); they are printed, not the step's status, which fails only on
# a data check or a crash. Then the same on the copy engine only (the strided
# SM kernel off), to see which path makes the figures, and a short traced run
# whose trace names each copy's path as the backend ran it (direct_sm, the SM
# kernel, or direct; the bench's path column has copy_path's three values).
step "p2p-strided: strided faces between two GPUs, sluice next to raw CUDA (sluice bench p2p --strided)"
if built "$bin/tools/sluice-bench-p2p-strided-cuda"; then
  for how in default engine; do
    set --
    [[ $how == engine ]] && set -- SLUICE_PEER_SM_STRIDED_MAX_KIB=0 SLUICE_PEER_SM_BATCH_MAX_KIB=0
    run env "$@" timeout 300 "$bin/tools/sluice" --backend cuda bench p2p --strided \
      --max-side="${SLUICE_P2P_STRIDED_MAX_SIDE:-512}" --trials="${SLUICE_P2P_STRIDED_TRIALS:-5}" \
      --json="$out/p2p-strided-$how.json" --csv="$out/p2p-strided-$how.csv" 2>&1 |
      tee "$out/p2p-strided-$how.txt"
    rc=${PIPESTATUS[0]}
    if [[ $rc -eq 77 ]]; then
      echo "p2p-strided: fewer than 2 GPUs here: skipped (the p2p-strided-same step runs on one)"
      break
    fi
    [[ $rc -ne 0 ]] && status=1
  done
  if [[ $rc -ne 77 ]]; then
    SLUICE_TRACE="$out/p2p-strided.trace.json" run timeout 120 "$bin/tools/sluice-bench-p2p-strided-cuda" \
      --max-side="${SLUICE_P2P_STRIDED_MAX_SIDE:-512}" --trials=1 --reps=2 > "$out/p2p-strided-traced.txt" 2>&1 ||
      status=1
  fi
else
  echo "p2p-strided: $bin/tools/sluice-bench-p2p-strided-cuda was not built"; status=1
fi
