#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Run tests/vm/immap-rmap-test.c (the rmap of a hot file stays complete:
# truncate while mapped by 16 processes, migration by compaction) in the
# VM on an ext4 scratch disk, under the classic LRU or MGLRU.
#
# Usage: tests/vm/immap-rmap.sh classic|mglru [--kernel BZIMAGE]
#   The kernel is --kernel, else $EXECGUARD_BZIMAGE, else what
#   kernel/build.sh prints. Exit status: the test's (TAP on stdout).
set -eu
here=$(cd "$(dirname "$0")" && pwd -P)
top=$(dirname "$(dirname "$here")")
usage() { sed -n '3,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//p}' "$0"; }
name=${1:-}
case $name in
classic) lru=0 ;;
mglru) lru=y ;;
-h|--help) usage; exit 0 ;;
*) usage >&2; exit 2 ;;
esac
shift
kernel=${EXECGUARD_BZIMAGE:-}
[ "${1:-}" = --kernel ] && { kernel=$2; shift 2; }
[ -n "$kernel" ] || kernel=$("$top/kernel/build.sh" | tail -n 1)
tmp=$(mktemp -d /var/tmp/immap-rmap.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
gcc -O2 -Wall -Wextra -o "$tmp/immap-rmap-test" "$here/immap-rmap-test.c"
echo "# tests/vm/immap-rmap.sh $name on $kernel"
"$top/tests/vm/vm-run.sh" --kernel "$kernel" --disk 256M --results "$tmp" \
	--timeout 900 --quiet --log "$tmp/console.log" -- /bin/sh -c \
	"echo $lru >/sys/kernel/mm/lru_gen/enabled && echo '# lru_gen:' \$(cat /sys/kernel/mm/lru_gen/enabled) && /results/immap-rmap-test /mnt/scratch >/results/tap 2>&1; echo \$? >/results/rc"
cat "$tmp/tap"
exit "$(cat "$tmp/rc")"
