#!/usr/bin/env bash
# scripts/setup waits for the package manager's lock instead of failing at
# once. A fake apt-get, first on PATH, fails the way apt-get does while another
# process holds /var/lib/apt/lists/lock (its first call here), then succeeds:
# setup must succeed, and pass DPkg::Lock::Timeout on every apt-get call. With
# the lock never given up and SLUICE_APT_LOCK_TIMEOUT=1, setup must fail.
# Nothing is installed: dpkg-query, apt-get and sudo are fakes.
#   setup_apt_lock.sh <source dir> <work dir>
set -euo pipefail
source_dir=$1
work=$2
rm -rf "$work"
mkdir -p "$work/bin"
cat > "$work/bin/apt-get" <<'EOF'
#!/usr/bin/env bash
echo "$*" >> "$FAKE_APT_LOG"
if [[ " $* " != *" -o DPkg::Lock::Timeout="[0-9]* ]]; then
  echo "fake apt-get: called without -o DPkg::Lock::Timeout=N: $*" >&2
  exit 99
fi
if (( $(wc -l < "$FAKE_APT_LOG") <= FAKE_APT_LOCKED_CALLS )); then
  echo "E: Could not get lock /var/lib/apt/lists/lock. It is held by process 1 (apt-get)" >&2
  echo "E: Unable to lock directory /var/lib/apt/lists/" >&2
  exit 100
fi
EOF
printf '#!/bin/sh\nexit 1\n' > "$work/bin/dpkg-query"  # every package is missing
printf '#!/bin/sh\nexec "$@"\n' > "$work/bin/sudo"
chmod +x "$work/bin/apt-get" "$work/bin/dpkg-query" "$work/bin/sudo"
export PATH="$work/bin:$PATH"
export FAKE_APT_LOG=$work/apt.log

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# The lock is held during the first call only.
FAKE_APT_LOCKED_CALLS=1 "$source_dir/scripts/setup" > "$work/out.log" 2>&1 ||
  { cat "$work/out.log"; fail "setup failed although the lock was given up"; }
cat "$work/out.log"
calls=$(wc -l < "$FAKE_APT_LOG")
[[ $calls -eq 3 ]] || fail "expected 3 apt-get calls (update while locked, update, install), saw $calls"
grep -q "waiting for it" "$work/out.log" || fail "setup did not say that it waits for the lock"

# The lock is never given up: setup gives up after SLUICE_APT_LOCK_TIMEOUT seconds.
rm -f "$FAKE_APT_LOG"
if FAKE_APT_LOCKED_CALLS=1000 SLUICE_APT_LOCK_TIMEOUT=1 "$source_dir/scripts/setup" \
     > "$work/out.log" 2>&1; then
  cat "$work/out.log"
  fail "setup succeeded although apt-get never got the lock"
fi
grep -q "Could not get lock" "$work/out.log" || fail "setup hid apt-get's error"
echo "PASS"
