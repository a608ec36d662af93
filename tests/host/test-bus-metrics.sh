#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# execguardctl metrics against a daemon on a private bus: promtool
# accepts the text, Debian's prometheus-node-exporter serves it from its
# textfile directory, and the values agree with execguardctl --json status.
. "$(dirname "$0")/bus/lib-bus.sh"

NODE_EXPORTER=${NODE_EXPORTER:-$(command -v prometheus-node-exporter)}
[ -x "$NODE_EXPORTER" ] || skip "prometheus-node-exporter is not installed (tools/deps.sh test)"
command -v promtool > /dev/null || skip "promtool is not installed (package prometheus; tools/deps.sh test)"
command -v curl > /dev/null || skip "curl is not installed"
bus_test_init

A=egtest-a-$$.service
B=egtest-b-$$.service
unit_cgroup "$S" "$A"
unit_cgroup "$S" "$B"
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule web]
MatchUnit=egtest-a-$$.service
Protect=yes
[Rule db]
MatchUnit=egtest-b-$$.service
Protect=yes
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF

start_daemon --cgroup-root="$T/cgroot"
wait_event 5 BUS_NAME || fail "daemon did not take its bus name"
run_in "$S/$A" sleep 600
pa=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pa" EXECGUARD_UNIT="'$A'" || fail "pid $pa not protected"

run_in "$S/$B" sleep 600
pb=$LAST_PID
wait_event 5 PROCESS_PROTECTED EXECGUARD_PID="$pb" EXECGUARD_UNIT="'$B'" || fail "pid $pb not protected"

# The patched kernel's figures, in the fake tree the daemon and metrics
# read (--cgroup-root): text faults, breaches, what reclaim kept. B's
# cgroup has no pgmajfault_exec, as on a stock kernel: the daemon
# estimates its text faults from the major faults since its first reading.
printf 'pgmajfault 9\npgmajfault_exec 5\nexec_protect_usage 4096\n' > "$T/cgroot/$S/$A/memory.stat"
printf 'low 0\nexec_protect_breach 2\n' > "$T/cgroot/$S/$A/memory.events"
printf 'pgmajfault 9\n' > "$T/cgroot/$S/$B/memory.stat"
echo "$pb" > "$T/cgroot/$S/$B/cgroup.procs"
text_faults_of() { # unit -> "faults source" from status --json
	ctl --json status | python3 -c '
import json, sys
u = [u for u in json.load(sys.stdin)["units"] if u["unit"] == sys.argv[1]]
print(u[0]["text_faults"], u[0]["text_fault_source"]) if u else print("none none")' "$1"
}
read -r tf src <<< "$(text_faults_of "$B")"
[ "$tf" = 0 ] && [ "$src" = estimate ] || fail "B's first reading: want 0 estimate, got $tf $src"
# 21 major faults more; with no file page seen coming back they count as
# text (share 1), or less if some other file page came back meanwhile.
printf 'pgmajfault 30\n' > "$T/cgroot/$S/$B/memory.stat"
b_grew() { read -r tf src <<< "$(text_faults_of "$B")"; [ "$tf" != 0 ]; }
wait_until 10 b_grew || fail "B's estimate did not grow with its major faults"
[ "$src" = estimate ] && [ "$tf" -ge 1 ] && [ "$tf" -le 21 ] || fail "B's estimate: want 1..21 estimate, got $tf $src"
b_tf=$tf
read -r tf src <<< "$(text_faults_of "$A")"
[ "$tf $src" = "5 kernel" ] || fail "A's text faults: want 5 kernel, got $tf $src"
pass "text faults: the kernel's counter for A, the estimate for B ($b_tf of 21 major faults)"

# The counters move with every exec on the host: status before and after
# the metrics bound them; the per-unit figures of a sleeping process do
# not move.
mkdir -p "$T/textfile"
t_before=$(date +%s)
ctl --json status > "$T/before.json" || fail "status --json failed"
ctl metrics --output="$T/textfile/execguard.prom" --cgroup-root="$T/cgroot" || fail "metrics --output failed"
ctl --json status > "$T/after.json" || fail "status --json failed"
ctl metrics > "$T/stdout.prom" || fail "metrics to stdout failed"
[ -f "$T/textfile/execguard.prom" ] || fail "no $T/textfile/execguard.prom"
[ "$(find "$T/textfile" -mindepth 1 | wc -l)" = 1 ] || fail "a temporary file was left: $(ls -a "$T/textfile")"
[ "$(stat -c %a "$T/textfile/execguard.prom")" = 644 ] || fail "execguard.prom is not 0644"
cat "$T/textfile/execguard.prom"
pass "metrics written atomically"

ctl --json metrics > /dev/null 2>&1
[ $? = 2 ] || fail "metrics --json: want exit 2"
ctl --output="$T/x.prom" status > /dev/null 2>&1
[ $? = 2 ] && [ ! -e "$T/x.prom" ] || fail "status --output=: want exit 2 and no file"
ctl metrics --output="$T/nonexistent/execguard.prom" > /dev/null 2>&1
[ $? = 1 ] || fail "metrics into a missing directory: want exit 1"
pass "usage errors and a failed write"

promtool check metrics < "$T/textfile/execguard.prom" > "$T/promtool.out" 2>&1 ||
	fail "promtool check metrics: $(cat "$T/promtool.out")"
promtool check metrics < "$T/stdout.prom" > "$T/promtool.out" 2>&1 ||
	fail "promtool check metrics (stdout): $(cat "$T/promtool.out")"
pass "promtool check metrics accepts it"

# The example alert rules (docs/metrics.md) load, and name families the
# formatter has (breaches are left out here: no kernel patch on the host).
sed -n '/^```yaml$/,/^```$/p' "$SRC/docs/metrics.md" | grep -v '^```' > "$T/rules.yml"
[ -s "$T/rules.yml" ] || fail "no alert rules in docs/metrics.md"
promtool check rules "$T/rules.yml" > "$T/promtool.out" 2>&1 || fail "docs/metrics.md's alert rules: $(cat "$T/promtool.out")"
for m in $(grep -oE 'execguard_[a-z_]+' "$T/rules.yml" | sort -u); do
	grep -qF "\"$m\"" "$SRC/daemon/metrics.c" || fail "docs/metrics.md's rules use $m, which metrics does not write"
done
pass "the alert rules of docs/metrics.md load and use the formatter's families"

# node_exporter on a free port, with only the textfile collector.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$NODE_EXPORTER" --web.listen-address="127.0.0.1:$port" --collector.disable-defaults \
	--collector.textfile --collector.textfile.directory="$T/textfile" > "$T/node.log" 2>&1 &
NODE_PID=$!
KIDS+=("$NODE_PID")
on_exit 'kill_own "$NODE_PID"'
scrape() { curl -sf "http://127.0.0.1:$port/metrics" > "$T/served.prom"; }
wait_until 15 scrape || fail "node_exporter does not answer on 127.0.0.1:$port: $(cat "$T/node.log")"
grep -q '^node_textfile_scrape_error 0$' "$T/served.prom" ||
	fail "node_exporter could not read the textfile: $(grep -i textfile "$T/served.prom")"
grep '^execguard_' "$T/served.prom" | head -n 30
pass "node_exporter serves the textfile"

python3 - "$T/before.json" "$T/after.json" "$T/served.prom" "$T/textfile/execguard.prom" "$A" "$t_before" <<'PY' || fail "served metrics disagree with status --json"
import json, re, sys, time
before, after = (json.load(open(p)) for p in sys.argv[1:3])
unit = sys.argv[5]
t_before = float(sys.argv[6])

def parse(path):
    out, types = {}, {}
    for line in open(path):
        m = re.match(r'# TYPE (\S+) (\S+)', line)
        if m:
            types[m[1]] = m[2]
        if line.startswith('#') or not line.strip():
            continue
        m = re.match(r'([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$', line.rstrip('\n'))
        assert m, line
        labels = dict(re.findall(r'([a-zA-Z_]+)="((?:[^"\\]|\\.)*)"', m[2] or ''))
        out.setdefault(m[1], []).append((labels, float(m[3])))
    return out, types

served, types = parse(sys.argv[3])
written, _ = parse(sys.argv[4])
# node_exporter sorts the labels and reformats the numbers (le="1e-05"
# for our 0.00001): compare parsed.
norm = lambda l: sorted((k, float(v) if k == 'le' else v) for k, v in l.items())
key = lambda ss: sorted((norm(l), v) for l, v in ss)
for name, samples in written.items():
    assert key(served.get(name, [])) == key(samples), (name, served.get(name), samples)

def one(name, **labels):
    s = [v for l, v in served[name] if all(l.get(k) == w for k, w in labels.items())]
    assert len(s) == 1, (name, labels, served.get(name))
    return s[0]

for key, name in [('exec_events', 'execguard_exec_events_total'), ('exit_events', 'execguard_exit_events_total'),
                  ('decisions', 'execguard_decisions_total'), ('overflows', 'execguard_overflows_total'),
                  ('full_rescans', 'execguard_rescans_total'), ('backend_errors', 'execguard_backend_errors_total')]:
    assert types[name] == 'counter', name
    assert before[key] <= one(name) <= after[key], (name, before[key], one(name), after[key])
assert before['exec_events'] > 0
assert one('execguard_info', version=before['version'], backend='kernel') == 1
assert types['execguard_cpu_seconds_total'] == 'counter' and one('execguard_cpu_seconds_total') >= 0
assert one('execguard_up') == 1
assert t_before - 1 <= one('execguard_last_success_timestamp_seconds') <= time.time() + 1

# Exec to decision: a histogram, cumulative buckets ending in +Inf, its
# count between the daemon's own before and after the metrics.
h = 'execguard_exec_decision_latency_seconds'
assert types[h] == 'histogram', types.get(h)
buckets = sorted(((float(l['le']), v) for l, v in served[h + '_bucket']), key=lambda b: b[0])
assert buckets[-1][0] == float('inf') and len(buckets) == 20, buckets
assert all(a[1] <= b[1] for a, b in zip(buckets, buckets[1:])), buckets
assert one(h + '_count') == buckets[-1][1] and one(h + '_sum') >= 0
inf = lambda s: s['latency_buckets'][-1]['count']
assert before['latency_buckets'][-1]['le_usec'] is None
assert inf(before) <= buckets[-1][1] <= inf(after), (inf(before), buckets[-1][1], inf(after))
assert inf(after) > 0, 'no exec decided while the test ran'

units = {u['unit']: u for u in after['units']}
assert {u['unit'] for u in before['units']} == set(units), 'units changed between the reads'
for name, u in units.items():
    protected = [(l, v) for l, v in served['execguard_unit_protected'] if l['unit'] == name]
    assert len(protected) == 1 and protected[0][1] == (1 if u['protected'] else 0), (name, protected)
    assert one('execguard_unit_processes', unit=name) == u['processes'], name
    for key, metric in [('text_mapped_bytes', 'execguard_unit_text_mapped_bytes'),
                        ('breaches', 'execguard_unit_breaches_total'),
                        ('major_faults', 'execguard_unit_major_faults_total'),
                        ('text_faults', 'execguard_unit_text_major_faults_total'),
                        ('locked_bytes', 'execguard_unit_text_locked_bytes')]:
        if u[key] is None:
            assert name not in [l['unit'] for l, _ in served.get(metric, [])], (metric, name)
        else:
            assert one(metric, unit=name) == u[key], (metric, name)
a = [l for l, v in served['execguard_unit_protected'] if l['unit'] == unit]
assert a and a[0]['reason'] == 'policy' and a[0]['source'] == 'web', a
assert units[unit]['reason'] == 'policy' and units[unit]['reason_source'] == 'web', units[unit]
for name, u in units.items():
    if u['text_faults'] is not None:
        m = [l for l, _ in served['execguard_unit_text_major_faults_total'] if l['unit'] == name]
        assert m == [{'unit': name, 'method': u['text_fault_source']}], (name, m)
assert units[unit]['text_faults'] == 5 and units[unit]['text_fault_source'] == 'kernel', units[unit]
b = [u for n, u in units.items() if n.startswith('egtest-b-')]
assert len(b) == 1 and b[0]['text_fault_source'] == 'estimate' and 1 <= b[0]['text_faults'] <= 21, b
assert units[unit]['protected'] and units[unit]['processes'] == 1
# The kernel backend set memory.exec_protect=max up the (fake) tree.
assert one('execguard_unit_exec_protect_bound_bytes', unit=unit) == float('inf')
assert one('execguard_unit_exec_protect_usage_bytes', unit=unit) == 4096
assert units[unit]['major_faults'] == 5 and units[unit]['breaches'] == 2, units[unit]
assert types['execguard_unit_major_faults_total'] == 'counter' and types['execguard_unit_breaches_total'] == 'counter'
print('agree:', len(units), 'units,', sum(len(v) for k, v in served.items() if k.startswith('execguard_')), 'samples')
PY
pass "served values agree with status --json"

kill_own "$NODE_PID"
wait "$NODE_PID" 2>/dev/null
stop_daemon || fail "daemon exit status $?"
ctl metrics > "$T/down.prom" 2> /dev/null
[ $? = 3 ] || fail "metrics without the daemon: want exit 3"
# The file the timer writes: replaced, not left with the old figures.
last=$(sed -n 's/^execguard_last_success_timestamp_seconds //p' "$T/textfile/execguard.prom")
ctl metrics --output="$T/textfile/execguard.prom" 2> /dev/null
[ $? = 3 ] || fail "metrics --output without the daemon: want exit 3"
grep -qx 'execguard_up 0' "$T/textfile/execguard.prom" || fail "no execguard_up 0: $(cat "$T/textfile/execguard.prom")"
grep -qx "execguard_last_success_timestamp_seconds $last" "$T/textfile/execguard.prom" ||
	fail "last success $last not kept: $(cat "$T/textfile/execguard.prom")"
[ -z "$(grep -v '^#' "$T/textfile/execguard.prom" | grep -v '^execguard_up \|^execguard_last_success_')" ] ||
	fail "old figures left in the file: $(cat "$T/textfile/execguard.prom")"
grep -qx 'execguard_up 0' "$T/down.prom" || fail "metrics to stdout without the daemon: $(cat "$T/down.prom")"
promtool check metrics < "$T/textfile/execguard.prom" > "$T/promtool.out" 2>&1 ||
	fail "promtool check metrics (down): $(cat "$T/promtool.out")"
pass "metrics without the daemon: exit 3, execguard_up 0, the last success kept, no old figures"
