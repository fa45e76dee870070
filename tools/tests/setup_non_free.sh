#!/usr/bin/env bash
# scripts/setup --hip-nvidia adds Debian's contrib and non-free components once,
# in a file of its own, with the mirror of the existing Debian entry, and
# leaves the other entries alone; a second run adds nothing, and a machine that
# already has non-free gets no file. The sources are a directory of this test
# (SLUICE_APT_ETC); dpkg-query, apt-get and sudo are fakes: nothing is installed.
#   setup_non_free.sh <source dir> <work dir>
set -euo pipefail
source_dir=$1
work=$2
rm -rf "$work"
mkdir -p "$work/bin" "$work/etc/sources.list.d"
printf '#!/bin/sh\necho "$*" >> "$FAKE_APT_LOG"\n' > "$work/bin/apt-get"
printf '#!/bin/sh\nexit 1\n' > "$work/bin/dpkg-query"  # every package is missing
printf '#!/bin/sh\nexec "$@"\n' > "$work/bin/sudo"
chmod +x "$work/bin/apt-get" "$work/bin/dpkg-query" "$work/bin/sudo"
export PATH="$work/bin:$PATH" FAKE_APT_LOG=$work/apt.log SLUICE_APT_ETC=$work/etc
debian=$work/etc/sources.list.d/debian.sources
added=$work/etc/sources.list.d/sluice-contrib-non-free.sources
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# Debian 12's own entries (deb822): main only, a mirror that is not the default.
cat > "$debian" <<'SOURCES'
Types: deb
# a comment
URIs: http://mirror.example/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://security.example/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SOURCES
cp "$debian" "$work/debian.sources.before"

"$source_dir/scripts/setup" --hip-nvidia > "$work/out1.log" 2>&1 || { cat "$work/out1.log"; fail "setup failed"; }
[[ -f $added ]] || fail "no $added"
grep -qx 'URIs: http://mirror.example/debian' "$added" || fail "not the existing entry's mirror: $(cat "$added")"
grep -qx 'Suites: bookworm bookworm-updates' "$added" || fail "suites: $(cat "$added")"
grep -qx 'Components: contrib non-free' "$added" || fail "components: $(cat "$added")"
cmp -s "$debian" "$work/debian.sources.before" || fail "the existing entries were changed"
grep -q 'install .*nvidia-cuda-toolkit' "$FAKE_APT_LOG" || fail "nvidia-cuda-toolkit not installed: $(cat "$FAKE_APT_LOG")"
grep -q 'install .*hipcc' "$FAKE_APT_LOG" || fail "hipcc not installed"

# Again: the components are there now, nothing is added or changed.
cp "$added" "$work/added.before"
"$source_dir/scripts/setup" --hip-nvidia > "$work/out2.log" 2>&1 || { cat "$work/out2.log"; fail "second setup failed"; }
cmp -s "$added" "$work/added.before" || fail "the second run changed $added"
[[ $(find "$work/etc/sources.list.d" -type f | wc -l) -eq 2 ]] || fail "a second run added a file"
grep -q "adding Debian's contrib" "$work/out2.log" && fail "the second run added the components again"

# A machine with non-free already (non-free-firmware is not it): no file.
rm "$added"
sed -i '0,/Components: main/s//Components: main contrib non-free non-free-firmware/' "$debian"
"$source_dir/scripts/setup" --hip-nvidia > "$work/out3.log" 2>&1 || { cat "$work/out3.log"; fail "third setup failed"; }
[[ ! -e $added ]] || fail "added $added although non-free was enabled"
sed -i 's/Components: main contrib non-free non-free-firmware/Components: main non-free-firmware/' "$debian"
"$source_dir/scripts/setup" --hip-nvidia > "$work/out4.log" 2>&1 || { cat "$work/out4.log"; fail "fourth setup failed"; }
[[ -f $added ]] || fail "non-free-firmware taken for non-free"
echo "setup --hip-nvidia: contrib and non-free added once, in their own file; other entries unchanged"
