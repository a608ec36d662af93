#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the VM under systemd (tests/vm/e2e/run.sh): every check is
# a command a user would type. Lines starting "E2E: " are the report.
set -u
stage=${1:?}
# Waits are this many times longer (10 on the KASAN+lockdep kernel)
# shellcheck disable=SC2034 # slow: read by lib-inside.sh (wait_for)
slow=${2:-1}
. "$(dirname "${BASH_SOURCE[0]}")/lib-inside.sh"
value() { cat "/sys/fs/cgroup/$1/memory.exec_protect" 2>/dev/null || echo missing; }

check_own_view
cp -a "$stage/." /
# Containers, as execguard.conf(5) EXAMPLES has them (the installed example).
mkdir -p /etc/execguard.d
cp /usr/share/doc/execguard/examples/containers.conf /etc/execguard.d/
systemctl daemon-reload
t0=$(date +%s.%N)

# A service that opts in with a drop-in of its own, and one that does not.
mkdir -p /etc/systemd/system/eg-web.service.d
cat > /etc/systemd/system/eg-web.service <<'UNIT'
[Service]
ExecStart=/usr/bin/sleep infinity
UNIT
cat > /etc/systemd/system/eg-web.service.d/execguard.conf <<'UNIT'
[X-ExecGuard]
Protect=yes
UNIT
cat > /etc/systemd/system/eg-batch.service <<'UNIT'
[Service]
ExecStart=/usr/bin/sleep infinity
UNIT
systemctl daemon-reload

check "execguardd.service starts" systemctl start execguardd
say "execguardd ready after $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
value_is() { [ "$(value "$1")" = "$2" ]; }
systemctl start eg-web eg-batch
wait_for 10 value_is system.slice/eg-web.service max
check "memory.exec_protect=max on eg-web.service" test "$(value system.slice/eg-web.service)" = max
check "memory.exec_protect=max on system.slice" test "$(value system.slice)" = max
check "memory.exec_protect=0 on eg-batch.service" test "$(value system.slice/eg-batch.service)" = 0

status_names_backend() {
	status=$(systemctl status execguardd --no-pager 2>&1)
	grep -q 'Status: ".*backend kernel' <<<"$status"
}
wait_for 5 status_names_backend
say "systemctl status: $(grep -m1 'Status:' <<<"$status" | sed 's/^ *//')"
check "STATUS= names the backend" grep -q 'Status: ".*backend kernel' <<<"$status"
grep -q 'Status: ' <<<"$status" || sed 's/^/E2E:   /' <<<"$status" | head -n 5

# journald may write it a little after the decision took effect. No
# rule names executables: the unit's cgroup is protected as a whole
# (MID_PUSH_PROTECTED), with the time from its creation.
journal_has_decision() {
	journalctl -u execguardd -o json --no-pager | python3 -c '
import json, sys
for line in sys.stdin:
    e = json.loads(line)
    # The push path decides a cgroup found at start-up before systemd has
    # named its unit: the cgroup and backend always, the unit when known.
    if e.get("MESSAGE_ID") == "a309d413061c425390fc1c3485dca667" \
       and e.get("EXECGUARD_UNIT", "eg-web.service") == "eg-web.service" \
       and e.get("EXECGUARD_BACKEND") == "kernel" and e.get("EXECGUARD_CGROUP") == "/system.slice/eg-web.service":
        sys.exit(0)
sys.exit(1)'
}
wait_for 10 journal_has_decision
check "journal: MESSAGE_ID of the decision with EXECGUARD_CGROUP=/system.slice/eg-web.service" journal_has_decision
# The time from the unit's start (systemd's InactiveExitTimestampMonotonic)
# to the daemon's decision (the journal entry's monotonic time), and from
# the cgroup's creation (the daemon's own figure): reported, not asserted.
start_to_protected() {
	local start
	start=$(systemctl show -p InactiveExitTimestampMonotonic --value eg-web)
	journalctl -u execguardd -o json --no-pager | python3 -c '
import json, sys
start = int(sys.argv[1])
for line in sys.stdin:
    e = json.loads(line)
    if e.get("MESSAGE_ID") == "a309d413061c425390fc1c3485dca667" and e.get("EXECGUARD_UNIT") == "eg-web.service":
        print("eg-web.service: start to protection %.1f ms, its cgroup created to protection %.1f ms" %
              ((int(e["__MONOTONIC_TIMESTAMP"]) - start) / 1000, int(e["EXECGUARD_LATENCY_USEC"]) / 1000))
        break' "$start"
}
say "$(start_to_protected)"
# Nothing per exec: the proc connector is not listened to at all.
check "no proc connector: no rule names executables" \
	sh -c 'journalctl -u execguardd --no-pager | grep -q "not listening to the proc connector"'
for _ in $(seq 50); do /bin/true; done
check "exec events 0 after 50 execs" sh -c '[ "$(execguardctl --json status | python3 -c "import json, sys; print(json.load(sys.stdin)[\"exec_events\"])")" = 0 ]'

pid=$(systemctl show -p MainPID --value eg-web)
st=$(execguardctl status 2>&1)
ex=$(execguardctl explain "$pid" 2>&1)
say "execguardctl status:"; sed 's/^/E2E:   /' <<<"$st"
say "execguardctl explain $pid:"; sed 's/^/E2E:   /' <<<"$ex"
check "execguardctl status lists eg-web.service" grep -q "eg-web.service" <<<"$st"
check "execguardctl explain names the drop-in" grep -q "eg-web.service.d/execguard.conf" <<<"$ex"
check "execguardctl status --json parses" sh -c 'execguardctl --json status | python3 -m json.tool >/dev/null'

# The drop-in changes; systemd reloads; the decision follows.
sed -i 's/Protect=yes/Protect=no/' /etc/systemd/system/eg-web.service.d/execguard.conf
systemctl daemon-reload
wait_for 10 value_is system.slice/eg-web.service 0
check "after daemon-reload with Protect=no: eg-web.service back to 0" test "$(value system.slice/eg-web.service)" = 0
sed -i 's/Protect=no/Protect=yes/' /etc/systemd/system/eg-web.service.d/execguard.conf
systemctl daemon-reload
wait_for 10 value_is system.slice/eg-web.service max
check "after daemon-reload with Protect=yes: eg-web.service max again" test "$(value system.slice/eg-web.service)" = max

# A bound in the drop-in: the unit's file gets it, system.slice stays
# max, and status shows the bound with what reclaim keeps.
printf 'ExecProtectLimit=16M\n' >> /etc/systemd/system/eg-web.service.d/execguard.conf
systemctl daemon-reload
wait_for 10 value_is system.slice/eg-web.service 16777216
check "ExecProtectLimit=16M: memory.exec_protect=16777216 on eg-web.service" value_is system.slice/eg-web.service 16777216
check "ExecProtectLimit=16M: system.slice stays max" value_is system.slice max
bound_in_status() {
	execguardctl --json status | python3 -c '
import json, sys
units = json.load(sys.stdin)["units"]
sys.exit(0 if any(u["unit"] == "eg-web.service" and u["state"].startswith("memory.exec_protect=16.0M, covers ") for u in units) else 1)'
}
check "execguardctl status: STATE memory.exec_protect=16.0M, covers ..." bound_in_status
bound_in_status || execguardctl --json status | sed 's/^/E2E:   /' | head -n 20
sed -i '/^ExecProtectLimit=/d' /etc/systemd/system/eg-web.service.d/execguard.conf
systemctl daemon-reload
wait_for 10 value_is system.slice/eg-web.service max
check "ExecProtectLimit= removed: max again" value_is system.slice/eg-web.service max

# A broken policy: systemctl reload fails (ExecReload= checks it first),
# the old policy stays, the journal says why.
mkdir -p /etc/execguard.d
printf '[Rule broken]\nProtect=sometimes\n' > /etc/execguard.d/99-broken.conf
reload_rc=0
systemctl reload execguardd 2> /tmp/reload.err || reload_rc=$?
check "systemctl reload with a broken drop-in fails (exit $reload_rc)" test "$reload_rc" != 0
bad_line_logged() { journalctl -u execguardd --no-pager | grep -q "/etc/execguard.d/99-broken.conf:2: invalid Protect=sometimes"; }
wait_for 10 bad_line_logged
check "execguardd still active after a bad reload" systemctl is-active --quiet execguardd
check "journal names the bad line" bad_line_logged
check "old policy still in force" test "$(value system.slice/eg-web.service)" = max
rm /etc/execguard.d/99-broken.conf
check "systemctl reload succeeds once it is fixed" systemctl reload execguardd

# What the package turns on (/usr/lib/execguard.d/10-recovery.conf) and
# masking it as execguard.conf(5) VENDOR DEFAULTS says.
jd=system.slice/systemd-journald.service
wait_for 10 value_is "$jd" max
check "the vendor drop-in protects systemd-journald.service" value_is "$jd" max
ln -s /dev/null /etc/execguard.d/10-recovery.conf
check "systemctl reload with the vendor drop-in masked" systemctl reload execguardd
wait_for 10 value_is "$jd" 0
check "masked: systemd-journald.service no longer protected" value_is "$jd" 0
check "execguardctl check-config names the masked file" sh -c 'execguardctl check-config | grep -qx "masked: /usr/lib/execguard.d/10-recovery.conf"'
rm /etc/execguard.d/10-recovery.conf
systemctl reload execguardd
wait_for 10 value_is "$jd" max
check "unmasked: systemd-journald.service protected again" value_is "$jd" max

# Killed: systemd restarts it and the state comes back.
old=$(systemctl show -p MainPID --value execguardd)
kill -9 "$old"
wait_for 20 sh -c "p=\$(systemctl show -p MainPID --value execguardd); [ -n \"\$p\" ] && [ \"\$p\" != 0 ] && [ \"\$p\" != $old ] && systemctl is-active --quiet execguardd"
check "systemd restarted execguardd after SIGKILL" systemctl is-active --quiet execguardd
# Active (Type=notify) means its initial scan is done; on the bus soon after.
explain_agrees() { execguardctl explain "$pid" 2>/dev/null | grep -q eg-web.service; }
wait_for 10 explain_agrees
check "protection still in place after the restart" value_is system.slice/eg-web.service max
check "execguardctl explain agrees after the restart" explain_agrees

# The shipped metrics service, as the timer runs it, under its sandbox:
# node_exporter's textfile directory gets a file naming the unit protected
prom=/var/lib/prometheus/node-exporter/execguard.prom
mkdir -p "${prom%/*}"
check "execguard-metrics.service runs under systemd" systemctl start execguard-metrics.service
metric_protected='^execguard_unit_protected{\(.*,\)\{0,1\}unit="eg-web.service"[,}].* 1$'
check "execguard.prom: execguard_unit_protected 1 for eg-web.service" grep -q "$metric_protected" "$prom"
check "execguard.prom: text only, no NUL or other control byte" sh -c "! LC_ALL=C grep -q '[^[:print:][:space:]]' $prom"
# three units protected: each row's label its own (execguardctl once kept
# pointers into an array it went on growing)
check "execguard.prom: eg-web.service's source is its drop-in" \
	grep -qF 'unit="eg-web.service",reason="drop-in",source="/etc/systemd/system/eg-web.service.d/execguard.conf:2"' "$prom"
# The patched kernel counts text faults: status and metrics say so.
web_text_from_kernel() { [ "$(unit_field eg-web.service text_fault_source)" = kernel ]; }
check "status: eg-web.service's text faults come from the kernel" web_text_from_kernel
check "execguard.prom: eg-web.service's text faults, method kernel" \
	grep -q '^execguard_unit_text_major_faults_total{unit="eg-web.service",method="kernel"} [0-9][0-9]*$' "$prom"
check "execguard-metrics.timer enabled and started" systemctl enable --now execguard-metrics.timer

# Protect=auto in a unit's own section: watched (sampled for text faults
# and PSI), not protected while it does not suffer; status says so.
mkdir -p /etc/systemd/system/eg-auto.service.d
cat > /etc/systemd/system/eg-auto.service <<'UNIT'
[Service]
ExecStart=/usr/bin/sleep infinity
UNIT
printf '[X-ExecGuard]\nProtect=auto\n' > /etc/systemd/system/eg-auto.service.d/execguard.conf
systemctl daemon-reload
systemctl start eg-auto
auto_watched() { unit_field eg-auto.service auto | grep -q '^auto: watched, not protected'; }
wait_for 20 auto_watched
check "Protect=auto: execguardctl status shows eg-auto.service watched, not protected" auto_watched
auto_watched || execguardctl status 2>&1 | sed 's/^/E2E:   /' | tail -n 8
check "Protect=auto: memory.exec_protect=0 on the calm eg-auto.service" value_is system.slice/eg-auto.service 0
systemctl stop eg-auto

# A podman container, matched by its scope (the containers example).
# shellcheck disable=SC2154 # ctr_cgroup, ctr_scope: set by podman_start (lib-inside.sh)
if podman_start; then
	wait_for 20 value_is "${ctr_cgroup#/}" max
	check "podman container: memory.exec_protect=max on ${ctr_cgroup#/}" value_is "${ctr_cgroup#/}" max
	check "podman container: execguardctl status shows $ctr_scope protected" \
		test "$(unit_field "$ctr_scope" protected)" = true
	podman_stop
fi

# systemd's unit signals reached the unit watcher (eg-auto started and
# stopped above, podman's scope): the stats line counts them.
stats_line() {
	kill -USR1 "$(systemctl show -p MainPID --value execguardd)"
	sleep 1
	journalctl -u execguardd --no-pager -o cat | grep "stats (on request)" | tail -n 1
}
line=$(stats_line)
say "stats: ${line#*stats (on request): }"
check "the unit watcher heard systemd start and stop units" \
	bash -c '[ "$(sed -n "s/.*units started \([0-9]*\) stopped \([0-9]*\).*/\1 \2/p" <<<"$0" | awk "{ print (\$1 > 0 && \$2 > 0) }")" = 1 ]' "$line"
check "stats: no exec event heard" bash -c 'grep -q "exec events 0," <<<"$0"' "$line"

systemctl stop execguardd
check "a clean stop clears what it set" test "$(value system.slice/eg-web.service)" = 0

# The daemon stopped: the metrics service (as the timer runs it) replaces
# the file with execguard_up 0 and no old figure, and does not fail.
check "execguard-metrics.service succeeds with execguardd stopped" systemctl start execguard-metrics.service
check "execguard.prom: execguard_up 0" grep -qx 'execguard_up 0' "$prom"
check "execguard.prom: the last success kept" grep -q '^execguard_last_success_timestamp_seconds [0-9]' "$prom"
check "execguard.prom: no figure of the stopped daemon left" sh -c "! grep -q '^execguard_unit_' $prom"
systemctl stop execguard-metrics.timer

finish
