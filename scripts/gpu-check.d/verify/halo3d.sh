# halo3d: examples/halo_3d on the GPUs: one rank on two GPUs, and two ranks on four (or on two with the mpi engine), each result bit-identical to one block's run
#
# Knobs: SLUICE_HALO3D_N=96  cube side of each block (the ctests use 24)
# Not in the default steps. Needs 2 GPUs (the example exits 77 on one; the
# step says so and passes). One rank on GPUs 0 and 1 under the build's
# automatic engine; then two ranks: with 4 or more GPUs each rank on two of
# its own (automatic engine), with 2 or 3 under the mpi engine (NCCL refuses
# two ranks of one communicator on one GPU). Each run must print
# "result: bit-identical".
step "halo3d: examples/halo_3d, 1 rank on 2 GPUs and 2 ranks"
n=${SLUICE_HALO3D_N:-96}
exe=$bin/examples/sluice-example-halo-3d-cuda
if built "$exe"; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
  engine=automatic; [[ $gpus -lt 4 ]] && engine=mpi
  for ranks in 1 2; do
    e=automatic; [[ $ranks -eq 2 ]] && e=$engine
    run timeout 180 mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$exe" --n="$n" --steps=20 \
      --engine="$e" 2>&1 | tee "$out/halo3d-np$ranks.txt"
    rc=${PIPESTATUS[0]}
    if [[ $rc -eq 77 ]]; then echo "halo3d: fewer than 2 GPUs here: skipped"; break; fi
    [[ $rc -ne 0 ]] && status=1
    if [[ -s "$out/halo3d-np$ranks.txt" ]] && ! grep -q "result: bit-identical" "$out/halo3d-np$ranks.txt"; then
      status=1
    fi
  done
else
  echo "halo3d: $exe was not built (sluice::comm needs MPI)"; status=1
fi
