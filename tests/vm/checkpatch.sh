#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/checkpatch.pl --strict over kernel/patches and kernel/execstorm
# (the cover letters aside), in the source tree that kernel/build.sh
# prepares.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd)

# checkpatch's SPDX check (scripts/spdxcheck.py) runs python3 with the
# ply and git modules: use the system's python3, install them if missing
export PATH=/usr/bin:/bin:$PATH
if ! python3 -c 'import ply, git' 2>/dev/null; then
	[ "$(id -u)" = 0 ] || { echo "error: install python3-ply python3-git" >&2; exit 1; }
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get -o DPkg::Lock::Timeout=600 update -q && apt-get -o DPkg::Lock::Timeout=600 install -y -q python3-ply python3-git; } >&2
fi

src=$("$repo/kernel/build.sh" --source-only | tail -n1)
mapfile -t patches < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$repo/kernel/patches/series")
[ ${#patches[@]} -gt 0 ] || { echo "error: empty series" >&2; exit 1; }
patches=("${patches[@]/#/patches/}")
mapfile -t pair < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e 's|^|execstorm/|' "$repo/kernel/execstorm/series")
[ ${#pair[@]} -gt 0 ] || { echo "error: empty kernel/execstorm/series" >&2; exit 1; }
patches+=("${pair[@]}")

rc=0
for p in "${patches[@]}"; do
	out=$(cd "$src" && perl scripts/checkpatch.pl --strict --show-types \
		"$repo/kernel/$p" 2>&1) || true
	if grep -q '^total: 0 errors, 0 warnings, 0 checks' <<<"$out" &&
	   ! grep -q 'Traceback' <<<"$out"; then
		echo "ok: $p"
	else
		echo "== $p"
		echo "$out"
		rc=1
	fi
done
exit $rc
