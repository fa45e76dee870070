# machine: what the results were measured on, in $OUT/machine.txt and the log:
# the GPUs and their links, the CPU (lscpu, clock source, frequency policy,
# the cost of its primitives), the compilers, and the commit and tree built.
# Knobs: SLUICE_COMMIT=<hash>  the commit to name (default: this copy's HEAD)
step "machine"
{
  date -u '+date: %Y-%m-%d %H:%M:%S UTC'
  run nvidia-smi --query-gpu=index,name,driver_version,memory.total --format=csv
  run nvidia-smi topo -m
  lscpu | grep -E '^(Model name|Socket|Core|Thread|CPU\(s\)|NUMA|Hypervisor|CPU max MHz|CPU min MHz)'
  # The host clock's source (a non-tsc one makes each clock read a system
  # call) and the CPU's frequency policy: both bear on host-bound loops.
  echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource 2>/dev/null || echo unknown)"
  echo "cpufreq governor: $(cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor 2>/dev/null || echo none)"
  # The CPU's primitives (bench/probes/cpu_probe.cpp; bench/probes/CMakeLists.txt builds
  # the same probe).
  mkdir -p build-gpu && run c++ -O2 -std=c++17 -pthread bench/probes/cpu_probe.cpp -o build-gpu/cpu-probe &&
    run build-gpu/cpu-probe
  nvcc --version | tail -2
  cmake --version | head -1
  c++ --version | head -1
  echo "commit: ${SLUICE_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)} (as given, or this copy's HEAD)"
  # The device tool copies the working tree onto a clone whose HEAD may be
  # older: the tree's own hash says what was built. It equals
  # `git rev-parse <commit>^{tree}` of the commit whose files these are.
  index=$(mktemp -u)
  echo "tree: $(GIT_INDEX_FILE=$index git add -A >/dev/null 2>&1 && GIT_INDEX_FILE=$index git write-tree 2>/dev/null || echo unknown)"
  rm -f "$index"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
