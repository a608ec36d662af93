#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/real's sampler and cgsegres on files of known content, and pysvc.py
# serving real requests (every rare task, its access log).
# Usage: test-helpers.sh SAMPLER CGSEGRES [PYSVC]
set -euo pipefail
sampler=$1 cgsegres=$2 pysvc=${3:-}
t=$(mktemp -d)
svc_pid=
trap '[ -n "$svc_pid" ] && kill "$svc_pid" 2>/dev/null; rm -rf "$t"' EXIT
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

# pysvc: a rare task on every request (RARE_EVERY 1), two rounds of them;
# each response names its task, each request is one access-log line
if [ -n "$pysvc" ]; then
	python3 "$pysvc" 0 "$t/access.log" 1 >"$t/pysvc.out" 2>&1 &
	svc_pid=$!
	for _ in $(seq 600); do grep -q 'serving on' "$t/pysvc.out" && break
		kill -0 "$svc_pid" 2>/dev/null || fail "pysvc did not start: $(cat "$t/pysvc.out")"; sleep 0.1; done
	port=$(sed -n 's/.*serving on 127.0.0.1:\([0-9]*\),.*/\1/p' "$t/pysvc.out")
	ntasks=$(sed -n 's/.*, \([0-9]*\) rare tasks,.*/\1/p' "$t/pysvc.out")
	if [ -z "$port" ] || [ "${ntasks:-0}" -le 10 ]; then fail "pysvc: no port or tasks in: $(cat "$t/pysvc.out")"; fi
	python3 - "$port" "$((2 * ntasks))" >"$t/tasks" <<'PY' || fail "pysvc: a request failed: $(cat "$t/tasks")"
import http.client, json, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
for _ in range(int(sys.argv[2])):
    c.request("GET", "/api")
    r = c.getresponse()
    assert r.status == 200, r.status
    print(*[k for k in json.loads(r.read()) if k.startswith("task_")])
PY
	[ "$(sort -u "$t/tasks" | wc -l)" = "$ntasks" ] ||
		fail "pysvc: $ntasks tasks, but the responses name: $(sort -u "$t/tasks" | tr '\n' ' ')"
	[ "$(wc -l <"$t/tasks")" = $((2 * ntasks)) ] || fail "pysvc: a response without its task"
	awk -v n=$((2 * ntasks)) 'NF != 3 || $3 != 200 || $1 < 1e9 || $2 < 0 || $2 > 60 { bad = 1 }
		END { exit bad || NR != n }' "$t/access.log" ||
		fail "pysvc: access log not one \"end seconds status\" line a request: $(head -n 3 "$t/access.log")"
fi
echo "bench/real helpers: ok"
