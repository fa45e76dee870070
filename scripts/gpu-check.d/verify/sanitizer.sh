# sanitizer: the conformance suite and the SM copy and staging unit tests under compute-sanitizer (memcheck, racecheck, synccheck)
#
# Left out with --no-sanitizer.
# Knobs: SLUICE_SANITIZER_TOOLS="memcheck racecheck synccheck"  the tools
#        SLUICE_SANITIZER_JOBS=8                sanitizer runs at once (one per tool and family)
#        SLUICE_SANITIZER_FAMILY_TIMEOUT=120    seconds per tool and family
#        SLUICE_SANITIZER_FAMILIES="Peer Xdev"  the conformance families run under the tools
#                                               (default: all twelve)
# Needs: probes (sluice-probe-held-stream)
if [[ $sanitizer -ne 1 ]]; then
  skipped="--no-sanitizer"
  return 0
fi
# One run per tool and test family, each with its own time limit, so that a
# family that hangs under a tool costs only its limit and is named (the last
# test it started is printed). The runs go SLUICE_SANITIZER_JOBS (default 8)
# at a time: the tools slow the host side tens of times, and the GPU has room.
# ERR-2 faults the device on purpose: left out (it ran in the conformance step).
family_limit=${SLUICE_SANITIZER_FAMILY_TIMEOUT:-120}
families=${SLUICE_SANITIZER_FAMILIES:-"ColdStart Errors Events HostFunctions Independence Lifetimes Memory Native Ordering Peer Priorities Xdev"}
step "compute-sanitizer: ${SLUICE_SANITIZER_TOOLS:-memcheck racecheck synccheck} x families, ${family_limit} s each, ${SLUICE_SANITIZER_JOBS:-8} at a time"
# IND-1's tests need a stream to complete while another is held on a stream
# memory wait. Under the tools that does not always happen, even in raw CUDA
# (sluice-probe-held-stream, H100, 2026-11-23; docs/conformance/sanitizer.md):
# different IND-1 tests failed in different runs. Each tool's probe runs here
# first; only where raw CUDA shows that tool holding the second stream are the
# IND-1 tests left out of that tool's run, with the probe's line as the reason.
# PEER-3's "waits for no other stream" is the same kind of test on two
# devices (a peer copy completes while a stream of each device is held); under
# all three tools it hung on two H100s (docs/conformance/sanitizer.md) where the probe
# also saw the tool hold the second stream: left out on the same condition.
# SLUICE_HOST_FUNC_PATH is not set: under the tools sluice itself takes the
# host-function path that cannot hang there; each tool's choice, as `sluice
# info` prints it under that tool, comes first.
for tool in ${SLUICE_SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
  echo "$tool: $(run timeout 120 compute-sanitizer --tool "$tool" "$bin/tools/sluice-cuda" info 2>&1 | grep -m1 -E '^ *host functions:')"
done | tee "$out/sanitizer-host-path.txt"
held_test='Independence.IND_1__*'
held_peer_test='PeerMultiDevice.PEER_3__copy_peer_waits_for_no_other_stream'
# The cold case that allocates device memory behind its hold needs sluice's
# internal stream to complete meanwhile: under racecheck it waited, the same
# condition (docs/results/runs/2026-12-01-cold-start-and-serializing-tools-h200.md).
held_cold_test='ColdStart.IND_4__host_functions_and_copies_first_behind_a_held_stream_return'
probes=()
for tool in ${SLUICE_SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
  ( r=$(run timeout 60 compute-sanitizer --tool "$tool" "$bin/bench/sluice-probe-held-stream" --seconds=5 2>&1 | grep 'warm=')
    echo "$r" > "$out/sanitizer-probe-$tool.txt" ) &
  probes+=($!)
done
# These pids only: a bare `wait` would also wait for the tee of this script's
# own output (the process substitution above), which never ends.
wait "${probes[@]}"
sanitize_one() {  # tool family
  local tool=$1 family=$2 flog="$out/sanitizer-$1-$2.log" rc summary passed failed line excluded=""
  local left_out=""
  if grep -q "did NOT complete" "$out/sanitizer-probe-$tool.txt"; then
    [[ $family == Independence ]] && left_out=$held_test
    [[ $family == Peer ]] && left_out=$held_peer_test
    [[ $family == ColdStart ]] && left_out=$held_cold_test
    [[ -n $left_out ]] && excluded=":$left_out"
  fi
  # Under the tools a process's first test took 13-28 s (tool start-up, 10 at
  # once on 2x H200): the per-test watchdog gets the family's limit here, so
  # a shorter SLUICE_CONFORMANCE_TEST_TIMEOUT for the plain runs does not
  # call start-up a hang.
  # SLUICE_PEER_SM_PUSH_MAX_KIB=1024: sluice's SM copy kernel takes the small
  # pushes too (by default only pulls), so memcheck and racecheck see both.
  SLUICE_CONFORMANCE_TEST_TIMEOUT="$family_limit" SLUICE_PEER_SM_PUSH_MAX_KIB=1024 \
  run timeout "$family_limit" compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 50 \
    "$bin/tests/sluice-conformance-cuda" --gtest_filter="${family}*-Errors.ERR_2__*$excluded" > "$flog" 2>&1
  rc=$?
  summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$flog" | tail -1)
  passed=$(grep -cE '^\[       OK \]' "$flog")
  failed=$(grep -cE '^\[  FAILED  \] [A-Za-z].*\(' "$flog")
  line="$tool $family: exit $rc, $passed ok, $failed failed; ${summary:-no summary}"
  [[ $rc -eq 124 ]] && line+="; TIMED OUT in: $(grep -E '^\[ RUN' "$flog" | tail -1)"
  [[ -n $excluded ]] && line+="; left out ${left_out} (a held stream must not hold others): raw CUDA under $tool: $(cat "$out/sanitizer-probe-$tool.txt")"
  echo "$line"
}
export -f sanitize_one
export out bin family_limit held_test held_peer_test held_cold_test
# shellcheck disable=SC2016  # "$0" and "$1" are the child bash's
for tool in ${SLUICE_SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
  for family in $families; do echo "$tool $family"; done
done | xargs -P "${SLUICE_SANITIZER_JOBS:-8}" -L 1 bash -c 'sanitize_one "$0" "$1"' | sort > "$out/sanitizer.log"
cat "$out/sanitizer.log"
# One archive instead of 30 logs: the device tool brings back only so many files.
(cd "$out" && tar -czf sanitizer-logs.tar.gz sanitizer-*-*.log) && rm -f "$out"/sanitizer-*-*.log
grep -qv ': exit 0,' "$out/sanitizer.log" && status=1
# The SM copy kernel's and the staged pipeline's own tests on one device (on
# one GPU the peer tests above skip, and with them both paths).
for tool in ${SLUICE_SANITIZER_TOOLS:-memcheck racecheck synccheck}; do
  for part in sm-copy staging; do
    run timeout 300 compute-sanitizer --tool "$tool" --error-exitcode 99 --print-limit 20 \
      "$bin/tests/unit/sluice-$part-tests-cuda" > "$out/sanitizer-unit-$part-$tool.txt" 2>&1
    rc=$?
    echo "$tool unit $part: exit $rc; $(grep -E 'PASSED|FAILED  \]' "$out/sanitizer-unit-$part-$tool.txt" | head -2 | tr '\n' ' ')$(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' "$out/sanitizer-unit-$part-$tool.txt" | tail -1)"
    [[ $rc -ne 0 ]] && status=1
  done
done
