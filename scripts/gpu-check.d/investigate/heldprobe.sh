# heldprobe: why IND-1's test fails under compute-sanitizer as a process's first test: raw CUDA's held stream, with and without memcheck
#
# Needs: probes (sluice-probe-held-stream)
# shellcheck disable=SC2016  # the bash -c scripts expand their variables themselves
# Not in the default steps. Why IND_1__a_stream_completes_while_another_is_held
# fails under compute-sanitizer when it is a process's first test: the same
# pattern in raw CUDA (sluice-probe-held-stream), each variant as a process of
# its own, with and without memcheck; then the sluice test alone and after
# each EVT-1 test (docs/conformance/sanitizer.md).
step "held-stream probe: raw CUDA and the IND-1 test, with and without compute-sanitizer"
probe=$bin/bench/sluice-probe-held-stream
{
  for tool in none memcheck; do
    for variant in "--warm=none" "--warm=copy" "--warm=wait" "--warm=both" "--warm=none --alloc-after-hold"; do
      echo "$tool $variant"
    done
  done
} | xargs -P 10 -L 1 bash -c '
  tool=$0; shift 0
  if [[ $tool == none ]]; then r=$(run timeout 90 "'"$probe"'" "$@" --seconds=10 2>&1)
  else r=$(run timeout 90 compute-sanitizer --tool "$tool" "'"$probe"'" "$@" --seconds=10 2>&1 | grep -E "warm=|ERROR SUMMARY|probe-held" | tr "
" " "); fi
  echo "[$tool] rc=$? $r"' | sort
test_bin=$bin/tests/sluice-conformance-cuda
ind='Independence.IND_1__a_stream_completes_while_another_is_held'
for first in "" Events.EVT_1__wait_returns_at_once_and_later_work_waits       Events.EVT_1__work_before_the_wait_is_not_held Events.EVT_1__wait_on_a_completed_event_does_not_hold; do
  echo "memcheck ${first:-(alone)}"
done | xargs -P 4 -L 1 bash -c '
  first=$1; filter='"$ind"'; [[ $first != "(alone)" ]] && filter="$first:$filter"
  r=$(run timeout 90 compute-sanitizer --tool memcheck "'"$test_bin"'" --gtest_filter="$filter" 2>&1 |
      grep -E "^\[ +(FAILED|OK) +\] [A-Z].*\(|ERROR SUMMARY" | tr "
" " ")
  echo "[memcheck, IND-1 test after ${first}] $r"' | sort
