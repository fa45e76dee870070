# p2p: peer copies, sluice next to raw CUDA in one run (sluice bench p2p), and the link matrix `sluice info` reports
#
# Knobs: SLUICE_P2P_MAX_MIB=1024  largest copy (also of the hipnv step's bench)
#        SLUICE_P2P_SM_RUN=0      without the second run (the SM copy kernel up to 64 MiB)
# Peer copies, sluice next to raw CUDA in one run (needs 2 GPUs; exit 77 says
# so on one); and the link matrix sluice reports (NVML for NVLink).
step "p2p: sluice info links, and sluice-bench-p2p-cuda"
run "$bin/tools/sluice" --backend cuda info 2>&1 | tee "$out/info.txt" || status=1
if built "$bin/tools/sluice-bench-p2p-cuda"; then
  run timeout 300 "$bin/tools/sluice" --backend cuda bench p2p --max-mib="${SLUICE_P2P_MAX_MIB:-1024}" --trials=5 \
    --json="$out/p2p.json" --csv="$out/p2p.csv"
  rc=$?
  [[ $rc -ne 0 && $rc -ne 77 ]] && status=1
  if [[ -s "$out/p2p.csv" ]] && command -v gnuplot >/dev/null; then
    run scripts/p2p-plot "$out/p2p.csv" "$out/p2p" || status=1
  fi
  # sluice's SM copy kernel on for every aligned copy up to 64 MiB, both
  # directions (the default: pulls up to 16 MiB on CUDA): where its crossover
  # with the copy engine lies; the path column says direct_sm.
  if [[ ${SLUICE_P2P_SM_RUN:-1} != 0 ]]; then
    step "p2p with the SM copy kernel on (SLUICE_PEER_SM_MAX_KIB=65536), up to 64 MiB"
    SLUICE_PEER_SM_MAX_KIB=65536 run timeout 240 "$bin/tools/sluice" --backend cuda bench p2p --max-mib=64 \
      --trials=5 --json="$out/p2p-sm.json" --csv="$out/p2p-sm.csv"
    rc=$?
    [[ $rc -ne 0 && $rc -ne 77 ]] && status=1
  fi
else
  echo "p2p: $bin/tools/sluice-bench-p2p-cuda was not built"; status=1
fi
