#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/exec-bound.sh's sampler on a file of known residency and a
# memory.stat of known content (bench/residency.h's two readers).
# Usage: test-sampler.sh SAMPLER
set -euo pipefail
sampler=$1
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# 64 KiB of a file, read just before: all resident (tmpfs or page cache)
head -c 65536 /dev/urandom >"$t/text"
cat "$t/text" >/dev/null
mkdir "$t/cg"
printf 'file 1\nexec_protect_usage_other 7\nexec_protect_usage 12288\n' >"$t/cg/memory.stat"
"$sampler" "$t/text" "$t/cg" 10 1 >"$t/out"
[ "$(grep -c '^SAMPLE ' "$t/out")" -ge 1 ] || fail "no SAMPLE line: $(cat "$t/out")"
awk '$1 == "SAMPLE" && ($3 != 65536 || $4 != 12288) { bad = 1 } END { exit bad }' "$t/out" ||
	fail "want resident 65536 and usage 12288 (not the longer key's 7): $(head -n 3 "$t/out")"

# a cgroup without the key: -1, not the last value seen
printf 'file 1\n' >"$t/cg/memory.stat"
"$sampler" "$t/text" "$t/cg" 10 1 >"$t/out"
awk '$1 == "SAMPLE" && $4 != -1 { bad = 1 } END { exit bad }' "$t/out" ||
	fail "want usage -1 without the key: $(head -n 3 "$t/out")"

# an empty file cannot be sampled: exit non-zero, no SAMPLE
: >"$t/empty"
if "$sampler" "$t/empty" "$t/cg" 10 1 >"$t/out"; then fail "sampled an empty file"; fi
echo "ok: sampler"
