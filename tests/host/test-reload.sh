#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# SIGHUP with a broken policy keeps the old one in force and says why;
# a good one takes over, releasing what it no longer protects.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2

A=execguard-reload-a-$$
B=execguard-reload-b-$$
for c in "$A" "$B"; do new_cgroup "$c"; fake_cgroup "$c"; done
write_conf <<CONF
[Daemon]
Backend=kernel
[Rule a]
MatchCgroup=/$A
Protect=yes
CONF
start_daemon --cgroup-root="$T/cgroot"

run_in "$A" sleep 60
p1=$LAST_PID
wait_log "protect pid $p1 " 5 || fail "first process not protected"

printf '[Rule b]\nMatchCgroup=/%s\nProtect=never\n' "$B" > "$T/etc/execguard.d/50-b.conf"
chmod 644 "$T/etc/execguard.d/50-b.conf"
kill -HUP "$DAEMON_PID"
wait_log "50-b.conf:3: invalid Protect=never" 5 || fail "reload error without file:line"
wait_log "reload rejected, the previous policy stays in force" 5 || fail "no rejection message"
run_in "$A" sleep 60
p2=$LAST_PID
wait_log "protect pid $p2 .*policy a" 5 || fail "old policy not in force after a bad reload"
kill -0 "$DAEMON_PID" || fail "daemon died on a bad reload"
pass "bad reload rejected, old policy kept"

printf '[Rule a-off]\nMatchCgroup=/%s\nProtect=no\n[Rule b]\nMatchCgroup=/%s\nProtect=yes\n' "$A" "$B" > "$T/etc/execguard.d/50-b.conf"
kill -HUP "$DAEMON_PID"
wait_log "policy reloaded: 3 rules from 2 files" 5 || fail "good reload not taken"
wait_log "pid $p1 .* no longer protected: a-off" 5 || fail "p1 not released by the new policy"
wait_log "set memory.exec_protect=0 in /$A" 5 || fail "/$A not cleared"
run_in "$B" sleep 60
p3=$LAST_PID
wait_log "protect pid $p3 .*policy b" 5 || fail "new policy not applied"
[ "$(file_value "$B")" = 1 ] || fail "/$B not set"
pass "good reload applied"

# A reload storm does not break it.
for i in $(seq 1 50); do kill -HUP "$DAEMON_PID"; done
# SIGHUP is taken before SIGUSR1: with a stats line, every reload of the
# storm is done.
stats > /dev/null
kill -0 "$DAEMON_PID" || fail "daemon died in a SIGHUP storm"
[ "$(file_value "$B")" = 1 ] || fail "/$B lost protection in a SIGHUP storm"
stop_daemon || fail "daemon exit status $?"
[ "$(file_value "$B")" = 0 ] || fail "stop did not clear what it set"
pass "SIGHUP storm survived, stop cleared /$B"
