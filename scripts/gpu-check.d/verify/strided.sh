# strided: MEM-7, MEM-8 and PEER-5 (strided copies, registered host memory) on each of the strided copies' paths
#
# The strided rules of the suite (tests/conformance/strided.cpp) three times:
# with the defaults (strided peer copies up to SLUICE_PEER_SM_STRIDED_MAX_KIB
# and batch pieces up to SLUICE_PEER_SM_BATCH_MAX_KIB on sluice's strided SM
# kernel, the rest on cudaMemcpy3DPeerAsync), with the SM kernel off (every
# strided peer copy on the copy engine), and with it taking every aligned copy
# up to 1 GiB; then the same against sluice::hip on HIP's NVIDIA platform where
# the hipnv step built it (HIP 5.2 has no 3-D peer copy: one hipMemcpyPeerAsync
# per row there). Each run fails the step on a failed test; one line each.
# Between them the strided SM kernel's own unit tests (unit.sm_strided.cuda).
# Knobs: SLUICE_HIPNV_DIR  (verify/hipnv.sh)
filter='*MEM_7*:*MEM_8*:*PEER_5*'
strided_runs() {  # strided_runs LABEL PROGRAM [ENV...]
  local label=$1 program=$2; shift 2
  local how log
  for how in default engine sm; do
    log=$out/strided-$label-$how.log
    case $how in
      default) set -- ;;
      engine) set -- SLUICE_PEER_SM_STRIDED_MAX_KIB=0 SLUICE_PEER_SM_BATCH_MAX_KIB=0 ;;
      sm) set -- SLUICE_PEER_SM_STRIDED_MAX_KIB=1048576 SLUICE_PEER_SM_BATCH_MAX_KIB=1048576 ;;
    esac
    run env "${extra_env[@]}" "$@" SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit \
      timeout 240 "$program" --gtest_filter="$filter" --gtest_brief=1 > "$log" 2>&1 || status=1
    echo "strided $label $how: $(grep -hE '^\[  (PASSED|FAILED|SKIPPED) ' "$log" | tr '\n' ' ')"
  done
}
step "strided: MEM-7, MEM-8, PEER-5 on the SM kernel's and the copy engine's paths (sluice::cuda)"
extra_env=()
strided_runs cuda "$bin/tests/sluice-conformance-cuda"
# The strided SM kernel itself: every unit, shape and batch size (tests/unit/sm_strided_test.cpp).
if built "$bin/tests/unit/sluice-sm-strided-tests-cuda"; then
  run timeout 120 "$bin/tests/unit/sluice-sm-strided-tests-cuda" --gtest_brief=1 \
    > "$out/strided-kernel.log" 2>&1 || status=1
  echo "strided SM kernel unit tests: $(grep -hE '^\[  (PASSED|FAILED|SKIPPED) ' "$out/strided-kernel.log" | tr '\n' ' ')"
fi
hipnv=${SLUICE_HIPNV_DIR:-$root/.hipnv}
[[ $hipnv == /* ]] || hipnv=$root/$hipnv
if built "$hipnv/bin/sluice-conformance-hip"; then
  step "strided: the same against sluice::hip on HIP's NVIDIA platform"
  extra_env=("LD_LIBRARY_PATH=$hipnv/lib")
  strided_runs hipnv "$hipnv/bin/sluice-conformance-hip"
fi
