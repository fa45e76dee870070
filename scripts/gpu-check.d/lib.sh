# Helpers of scripts/gpu-check and its steps, sourced by the driver before
# any step. A step file is sourced in the driver's shell: it reads the
# driver's variables (root, out, arch, jobs, bin, conformance_test_limit,
# prefix_path, build_sluice) and sets status=1 when something failed.

# step TITLE...: a heading in the log, with the time.
step() { echo; echo "=== $* ($(date -u +%H:%M:%S))"; }

# wanted STEP: whether the run asked for STEP (SLUICE_GPU_STEPS, or the default set).
wanted() { [[ $steps == *",$1,"* ]]; }

# dry_run: whether SLUICE_GPU_DRY_RUN asks for the commands to be printed, not run.
dry_run() { [[ ${SLUICE_GPU_DRY_RUN:-0} != 0 ]]; }

# run COMMAND...: runs COMMAND. In a dry run it prints it instead ("+ ", then
# the environment variables (upper-case names) that differ from the driver's
# environment at its start, the command, and "> FILE" where its output goes
# to a file) on the log (fd 3) and succeeds, so that each step shows every
# command it would run.
run() {
  if ! dry_run; then
    "$@"
    return
  fi
  local shell=$BASHPID to vars
  to=$(readlink "/proc/$shell/fd/1" 2>/dev/null)
  mapfile -t vars < <(env -0 | sort -z | comm -z -13 "$dry_run_environment" - | tr '\0' '\n' |
                      grep -E '^[A-Z_][A-Z0-9_]*=' | grep -vE '^(SHLVL|_|PWD|OLDPWD)=')
  {
    printf '+'
    [[ ${#vars[@]} -gt 0 ]] && printf ' %q' "${vars[@]}"
    printf ' %q' "$@"
    [[ $to == /* ]] && printf ' > %s' "$to"
    printf '\n'
  } >&3
}
# The sanitizer, launchblocking and heldprobe steps run commands in children
# (xargs ... bash -c).
export -f run dry_run

# built PROGRAM: whether the build made PROGRAM (in a dry run: as if it had).
built() { [[ -x $1 ]] || dry_run; }

# The 2 ranks' placement in the commbench and halo steps. --bind-to none by
# default: Open MPI binds each of 2 ranks to one core, and sluice's engine
# thread must not share it with the enqueuing thread.
read -r -a placement <<< "${SLUICE_MPIRUN_BIND:---bind-to none}"

# HOST-2 after the tests that come before it in the suite's order, in one
# process, SLUICE_HOSTORDER_ROUNDS times (each round a fresh process): the
# whole suite once failed HOST-2 on 2x H100 (HIP's NVIDIA platform) and on an
# H200 (CUDA), 11 of 12 blocked host functions started, where HOST-2 alone
# passed (docs/design.md, "Which host functions use the word watcher"). The
# prefix ends with HOST-2's test beside more live streams than hardware queues.
# Rounds with the path rule (SLUICE_HOST_FUNC_PATH unset) count; then one
# traced round says which path the host functions took (host_func spans by
# path); then the same rounds with every host function forced onto the word
# watcher (SLUICE_HOST_FUNC_PATH=signal, the reverted merge's behaviour), as a
# diagnosis only: they show whether the old failure still reproduces here.
# $1: the conformance program; $2: a label for the logs; the rest: a command
# prefix (env ...) to run it with. Steps hostorder and hipnv.
host_order_rounds() {
  local exe=$1 label=$2
  shift 2
  local rounds=${SLUICE_HOSTORDER_ROUNDS:-5} list last filter mode r rc passed log trace
  list=$(run "$@" "$exe" --gtest_list_tests | awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}')
  last=$(grep -n '^HostFunctions\.HOST_2__' <<< "$list" | tail -1 | cut -d: -f1)
  if [[ -z $last ]]; then
    echo "hostorder ($label): no HostFunctions.HOST_2 test listed by $exe"
    return 1
  fi
  filter=$(head -n "$last" <<< "$list" | paste -sd: -)
  echo "hostorder ($label): the first $last tests of the suite's order, ending with $(sed -n "${last}p" <<< "$list")"
  local failed=0
  for mode in auto signal; do
    passed=0
    for r in $(seq 1 "$rounds"); do
      log=$out/hostorder-$label-$mode-$r.log
      SLUICE_HOST_FUNC_PATH=$mode SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit \
        run "$@" timeout 600 "$exe" --gtest_filter="$filter" --gtest_brief=1 > "$log" 2>&1
      rc=$?
      # A round counts by the HostFunctions tests (a hang or a crash too); other
      # tests' failures in the prefix are printed, not counted.
      if ! grep -qE '^\[==========\] [0-9]+ tests? from .* ran' "$log" ||
         grep -qE 'FAILED  \] HostFunctions\.|has run for' "$log"; then
        echo "  $mode round $r: exit $rc: $(grep -hE 'blocked host functions started|FAILED  \] [A-Z].*\(|has run for' "$log" | head -4 | tr '\n' ' ')"
      else
        passed=$((passed + 1))
        [[ $rc -eq 0 ]] || echo "  $mode round $r: HostFunctions passed; other tests failed: $(grep -hE 'FAILED  \] [A-Z].*\(' "$log" | head -3 | tr '\n' ' ')"
      fi
    done
    if [[ $mode == auto ]]; then
      echo "hostorder ($label): path rule (SLUICE_HOST_FUNC_PATH=auto): $passed of $rounds rounds passed"
      [[ $passed -eq $rounds ]] || failed=1
      trace=$out/hostorder-$label-trace.json
      SLUICE_TRACE=$trace SLUICE_CONFORMANCE_TEST_TIMEOUT=$conformance_test_limit \
        run "$@" timeout 600 "$exe" --gtest_filter="$filter" --gtest_brief=1 > "$out/hostorder-$label-traced.log" 2>&1
      rc=$?
      echo "hostorder ($label): traced round: exit $rc ($(grep -hE 'FAILED  \] [A-Z].*\(' "$out/hostorder-$label-traced.log" | head -3 | tr '\n' ' ')); host_func spans by path: signal $(grep -o '"path": "signal"' "$trace" 2>/dev/null | wc -l), kernel $(grep -o '"path": "kernel"' "$trace" 2>/dev/null | wc -l), callback $(grep -o '"path": "callback"' "$trace" 2>/dev/null | wc -l)"
      grep -qE 'FAILED  \] HostFunctions\.|has run for' "$out/hostorder-$label-traced.log" && failed=1
    else
      echo "hostorder ($label): every host function on the word watcher (SLUICE_HOST_FUNC_PATH=signal; diagnosis, not counted): $passed of $rounds rounds passed"
    fi
  done
  return $failed
}

# An earlier commit's tree in .old/ (ignored by git, carried: `git archive
# <commit> | tar -x -C .old`), built in build-gpu/old: build_old LOG TARGET...
# Steps coldstart, baseline and commbench.
build_old() {
  local log=$1; shift
  run cmake -S .old -B build-gpu/old -DCMAKE_BUILD_TYPE=Release -DSLUICE_ENABLE_CUDA=ON \
        -DSLUICE_CUDA_ARCHITECTURES="$arch" -DSLUICE_INSTALL=OFF -DSLUICE_BUILD_TOOLS=OFF \
        "${prefix_path[@]}" > "$log" 2>&1 &&
    run cmake --build build-gpu/old -j "$jobs" --target "$@" >> "$log" 2>&1
}

# One GPU per rank (steps comm and hipnv): `bash -c "$rank_gpus" rank PROGRAM ARGS`
# under mpirun, with SLUICE_GPU_COUNT exported: rank r sees GPU r % count first
# (its device 0), the others after it.
# shellcheck disable=SC2016  # expanded by each rank's bash, not here
rank_gpus='n=$SLUICE_GPU_COUNT; r=${OMPI_COMM_WORLD_RANK:-0}; first=$((r % n)); v=$first
           for ((g = 0; g < n; ++g)); do [[ $g -ne $first ]] && v="$v,$g"; done
           export CUDA_VISIBLE_DEVICES=$v; echo "rank $r: CUDA_VISIBLE_DEVICES=$v" >&2; exec "$@"'
