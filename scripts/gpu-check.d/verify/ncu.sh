# ncu: one example under Nsight Compute (--set basic), which serializes every kernel launch
#
# Not in the default steps. One example under Nsight Compute, which
# serializes every kernel launch (sluice takes the signal path there).
# Knobs: SLUICE_NCU_EXAMPLE=dual-pipe  the example
step "ncu: an example under Nsight Compute (--set basic)"
ncu_bin=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
run timeout 120 "$ncu_bin" --set basic --target-processes all "$bin/tools/sluice-cuda" info 2>&1 |
  grep -E '^ *host functions:'
run timeout 300 "$ncu_bin" --set basic --target-processes all \
  "$bin/examples/sluice-example-${SLUICE_NCU_EXAMPLE:-dual-pipe}-cuda" > "$out/ncu-example.log" 2>&1
rc=$?
echo "example ${SLUICE_NCU_EXAMPLE:-dual-pipe} under ncu: exit $rc"
tail -5 "$out/ncu-example.log"
[[ $rc -eq 0 ]] || status=1
