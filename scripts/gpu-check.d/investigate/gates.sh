# gates: raw CUDA: K streams' host-function gates held at once, as a stream memory wait or as a spinning kernel
#
# Knobs: SLUICE_GATES_STREAMS=64, SLUICE_GATES_TRIALS=20  the probe's streams and trials
#        SLUICE_GATES_ARGS="--pauses=500,4000"           more options for it
# Needs: probes (sluice-probe-gates)
# Not in the default steps. Raw CUDA: K streams' host-
# function gates held at once, as a stream memory wait (sluice's today) or
# as a kernel spinning on the gate word; signals seen with every gate
# closed, and K = 1 / 32 / 64 with each gate opened 1 ms after its signal.
step "probe: K streams' gates held at once, memory wait or spinning kernel (raw CUDA)"
# shellcheck disable=SC2086  # the knobs split into options on purpose
run timeout 120 "$bin/bench/sluice-probe-gates" --streams=${SLUICE_GATES_STREAMS:-64} \
  --trials=${SLUICE_GATES_TRIALS:-20} ${SLUICE_GATES_ARGS:-} 2>&1 | tee "$out/gates.txt" || status=1
