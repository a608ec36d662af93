#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/real's sampler and cgsegres on files of known content.
# Usage: test-helpers.sh SAMPLER CGSEGRES
set -euo pipefail
sampler=$1 cgsegres=$2
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# sampler: "key value" lines, a single value, PSI; only changes after the
# first sample
printf 'pgmajfault 3\npgmajfault_exec 1\n' >"$t/stat"
echo 4096 >"$t/current"
printf 'some avg10=0.00 avg60=0.00 avg300=0.00 total=10\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=5\n' >"$t/psi"
"$sampler" 20 "$t/out" svc="$t/stat" cur="$t/current" psi="$t/psi" &
pid=$!
for _ in $(seq 100); do [ -s "$t/out" ] && break; sleep 0.05; done
printf 'pgmajfault 7\npgmajfault_exec 1\n' >"$t/stat.new" && mv "$t/stat.new" "$t/stat"
for _ in $(seq 100); do grep -q ' svc pgmajfault 7$' "$t/out" && break; sleep 0.05; done
kill "$pid"; wait "$pid" || true
for want in 'svc pgmajfault 3' 'svc pgmajfault_exec 1' 'svc pgmajfault 7' 'cur value 4096' \
	'psi some_total 10' 'psi full_total 5'; do
	grep -q " $want\$" "$t/out" || fail "sampler: no \"$want\" in: $(cat "$t/out")"
done
[ "$(grep -c ' svc pgmajfault_exec ' "$t/out")" = 1 ] || fail "sampler: an unchanged value written twice"

# cgsegres: a file given by name, read just before (all resident), and a
# cgroup that does not exist (no processes: nothing else reported)
prog=$(readlink -f /bin/true)
cat "$prog" >/dev/null
"$cgsegres" "$t/no-such-cgroup" "$prog" >"$t/seg"
grep -q "^$prog r-x " "$t/seg" || fail "cgsegres: no r-x segment of $prog: $(cat "$t/seg")"
awk -v p="$prog" '$1 != p || $3 < $4 || $3 <= 0 { bad = 1 } END { exit bad }' "$t/seg" ||
	fail "cgsegres: a segment resident beyond its size, or another file: $(cat "$t/seg")"
awk '$2 == "r-x" && $4 != $3 { bad = 1 } END { exit bad }' "$t/seg" ||
	fail "cgsegres: $prog's code not all resident right after reading it: $(cat "$t/seg")"
echo "bench/real helpers: ok"
