# stress: 10^6 random operations checked against a sequential reference, and --churn (IND-4 under load)
#
# The stress.cuda and stress.cuda.churn ctests' programs (tests/stress/,
# label stress) with the same options, run here with a 300 s limit each and
# their output in the log.
step "stress: 10^6 operations, 64 streams, up to 4 devices, 16 threads"
run timeout 300 "$bin/tests/stress/sluice-stress-cuda" --ops=1000000 --streams=64 --devices=4 \
  --threads=16 || status=1
# IND-4 under load: streams, events, flags and buffers created and destroyed
# while streams are held (a call that waits for a held stream fails the run).
step "stress --churn: 20 rounds, 64 streams per device and round created while streams are held"
run timeout 300 "$bin/tests/stress/sluice-stress-cuda" --churn --rounds=20 --devices=4 --threads=4 |
  tail -3 || status=1
