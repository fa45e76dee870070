# xdevprobe: raw CUDA: host-to-host copies behind a held stream, and calls on a stream of device 1 with device 0 current
#
# Needs: probes (sluice-probe-xdev)
# Raw CUDA: host-to-host copies behind a held stream, and calls on a stream
# of device 1 with device 0 current (why sluice does what docs/design.md says).
step "probe: cross-device calls and host-to-host copies (raw CUDA)"
if built "$bin/bench/sluice-probe-xdev"; then
  run timeout 60 "$bin/bench/sluice-probe-xdev" --hold-ms=1000 2>&1 | tee "$out/xdev-probe.txt" || status=1
fi
