# hostfn: host functions' cost: idle with 64 streams alive (target <= 1 % of one core), while one is pending, and 64 streams' released at once against one
#
# Knobs: SLUICE_HOSTFN_TRIALS=500           trials per K of the fanout
#        SLUICE_HOSTFN_ARGS="--block-us=0"  more options for the bench
# Host functions without the vendor callback (bench/host_fn.cpp):
# the process's CPU use with 64 streams alive and no host function pending
# over 10 s (target <= 1 % of one core, exit 1 when missed), while one is
# pending (reported), HOST-2's blocked functions at once (sluice and the
# device's part on raw streams), and 64 streams' host functions released at
# once against one, next to raw CUDA (target: ratio <= 2.0, reported).
# Every part is bounded and the bench's own --time-limit (240 s) lies
# under this step's timeout; its stdout is line buffered.
step "hostfn: sluice-bench-host-fn-cuda (idle cost, pending cost, fanout 64 vs 1)"
if built "$bin/bench/sluice-bench-host-fn-cuda"; then
  # shellcheck disable=SC2086  # SLUICE_HOSTFN_ARGS splits into options on purpose
  run timeout 300 "$bin/bench/sluice-bench-host-fn-cuda" --idle-seconds=10 --pending-seconds=5 \
    --fanout=64 --trials="${SLUICE_HOSTFN_TRIALS:-500}" ${SLUICE_HOSTFN_ARGS:-} 2>&1 | tee "$out/host_fn.txt"
  [[ ${PIPESTATUS[0]} -eq 0 ]] || status=1
else
  echo "sluice-bench-host-fn-cuda not built"; status=1
fi
