# capture: raw CUDA: what stream capture does with each kind of call sluice makes
#
# Needs: probes (sluice-probe-capture)
# Not in the default steps. One line per case (a fresh stream and capture
# each): the call's code, the capture's status, EndCapture's result, the
# graph's node types, what memory holds at capture and after a launch; then
# a graph exec launched on two streams and the host cost of a 64-kernel
# graph's launch against 64 eager launches.
step "probe: what CUDA's stream capture does with each kind of call (raw CUDA)"
run timeout 120 "$bin/bench/sluice-probe-capture" 2>&1 | tee "$out/capture.txt" || status=1
