# graph: the GRAPH family (GRAPH-1..16) on this GPU, one verdict per rule, three rounds, each a fresh process
#
# sluice-conformance-graph-cuda writes its verdicts as graph-cuda.md; with
# the programs of SLUICE_HIPNV_DIR (default .hipnv), sluice::hip's on HIP's
# NVIDIA platform too.
# GRAPH-13 (the first capture on a fresh device) holds only in a fresh
# process, so each round is one.
# Knobs: SLUICE_GRAPH_ROUNDS=3    rounds of the whole family
#        SLUICE_HIPNV_DIR=.hipnv  (verify/hipnv.sh)
step "graph: the GRAPH family (sluice-conformance-graph-cuda)"
for r in $(seq 1 "${SLUICE_GRAPH_ROUNDS:-3}"); do
  run timeout 300 "$bin/tests/graph/sluice-conformance-graph-cuda" --gtest_brief=1 \
    --markdown="$out/graph-cuda.md" > "$out/graph-cuda-$r.log" 2>&1
  rc=$?
  [[ $rc -eq 0 ]] || status=1
  echo "cuda round $r: exit $rc; $(grep -hE '^[0-9]+ rules: ' "$out/graph-cuda-$r.log" | tail -1)"
done
grep -E '^  GRAPH-' "$out/graph-cuda-1.log"
hipnv=${SLUICE_HIPNV_DIR:-$root/.hipnv}
if [[ -x $hipnv/bin/sluice-conformance-graph-hip ]]; then
  for r in $(seq 1 "${SLUICE_GRAPH_ROUNDS:-3}"); do
    run timeout 300 "$hipnv/bin/sluice-conformance-graph-hip" --gtest_brief=1 \
      --markdown="$out/graph-hipnv.md" > "$out/graph-hipnv-$r.log" 2>&1
    rc=$?
    [[ $rc -eq 0 ]] || status=1
    echo "hipnv round $r: exit $rc; $(grep -hE '^[0-9]+ rules: ' "$out/graph-hipnv-$r.log" | tail -1)"
  done
  grep -E '^  GRAPH-' "$out/graph-hipnv-1.log"
fi
