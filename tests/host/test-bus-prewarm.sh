#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Prewarm end to end, with the kernel backend (on a fake cgroup tree
# where the kernel lacks memory.exec_protect) and with the lock backend:
# a unit's program maps a 64 MiB text file executable and touches its
# first 4 MiB; the daemon records that range (not the read-around, not
# the whole file); the file's pages are evicted; at the unit's next start
# the daemon reads the recorded range back before the program touches
# anything, and nothing else of the file. Then an upgrade: the file
# replaced (new inode and mtime) is reported as changed and not read.
# Asserted by mincore() from outside, MESSAGE_IDs and execguardctl
# --json status, never by timing.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init
command -v python3 > /dev/null || skip "python3 is not installed"
PC="$(cd "$(dirname "$0")" && pwd)/prewarm/pagecache.py"
# The interpreter itself, not a wrapper script (pyenv's shims exec a few
# shell scripts first, each an exec event in the unit).
PY=$(python3 -c 'import os, sys; print(os.path.realpath(sys.executable))')

# The text must be on a disk file system (tmpfs pages are not evicted
# like file text, and not recorded): /var/tmp, not $T.
D=$(mktemp -d "${PREWARM_TMPDIR:-/var/tmp}/execguard-prewarm-XXXXXX") || fail "cannot make a directory for the text file"
on_exit "rm -rf '$D'"
case $(findmnt -n -o FSTYPE -T "$D") in tmpfs | ramfs) skip "$D is on tmpfs: set PREWARM_TMPDIR to a disk file system" ;; esac
F=$D/text
MIB=$((1024 * 1024))
SIZE=$((64 * MIB))
TOUCH=$((4 * MIB))
# Beyond what the program touched and the fault-around after it: never
# read, whatever the disk's read-ahead (the file system's read-around of
# a fault may be megabytes; the record keeps only what was mapped).
FAR=$((TOUCH + 8 * MIB))

A=egtest-pw-$$.service
unit_cgroup "$S" "$A"

resident() { python3 "$PC" resident "$F" "$1" "$2" | cut -d' ' -f1; }
pages() { echo $((($2 - $1) / $(getconf PAGE_SIZE))); }
# The record's "LENGTH HEAT" of the range of $F at offset 0.
range0() {
	awk -v f="$F" '$1 == "file" { cur = ($6 == f) } cur && $1 == "range" && $2 == 0 { print $3, $4 }' "$REC" 2>/dev/null
}
touched_on_record() {
	local r
	r=$(range0)
	[ -n "$r" ] && [ "${r% *}" -ge "$TOUCH" ] && [ "${r#* }" -ge 2 ]
}
touched_back() { [ "$(resident 0 "$TOUCH")" -ge $(($(pages 0 "$TOUCH") * 9 / 10)) ]; }
# prewarm_field FIELD: the unit's FIELD in execguardctl --json status.
prewarm_field() {
	ctl --json status | python3 -c '
import json, sys
for u in json.load(sys.stdin).get("prewarm", []):
    if u["unit"] == sys.argv[1]:
        print(u[sys.argv[2]])' "$A" "$1"
}
# Evict the file and check that it is gone (pages still in a CPU's LRU
# batch or under writeback can survive one DONTNEED).
evicted() { python3 "$PC" evict "$F" && [ "$(resident 0 "$SIZE")" = 0 ]; }
# The unit has no protected process left, as the daemon sees it.
no_processes() {
	ctl --json status | python3 -c '
import json, sys
sys.exit(any(u["unit"] == sys.argv[1] and u["processes"] > 0 for u in json.load(sys.stdin)["units"]))' "$A"
}
bytes_of() { sed -n 's/.* EXECGUARD_BYTES=\([0-9]*\).*/\1/p'; }

scenario() {
	local backend=$1 n_rec n_rep p bytes r
	shift
	REC=$T/prewarm-$backend/$A.prewarm
	write_conf <<CONF
[Daemon]
Backend=$backend
PrewarmRecordSec=1
[Rule web]
MatchUnit=$A
Protect=yes
Prewarm=yes
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF
	python3 "$PC" make "$F" 64 || fail "cannot write the text file"
	: > "$T/daemon.log"
	start_daemon --prewarm-dir="$T/prewarm-$backend" "$@"
	wait_event 5 BUS_NAME || fail "$backend: daemon did not take its bus name"

	# 1. A run that uses the first 4 MiB: recorded, and only that.
	python3 "$PC" evict "$F"
	rm -f "$T/touched"
	run_in "$S/$A" "$PY" "$PC" run "$F" "$TOUCH" "$T/touched"
	p=$LAST_PID
	wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$p" EXECGUARD_UNIT="'$A'" || fail "$backend: pid $p not protected"
	wait_until 30 test -s "$T/touched" || fail "$backend: the program did not touch its text"
	wait_until 20 touched_on_record || fail "$backend: the touched range is not on record: $(range0) ($(cat "$REC" 2>/dev/null | head -n 20))"
	kill_own -TERM "$p"
	wait_event 10 PREWARM_RECORDED EXECGUARD_UNIT="'$A'" || fail "$backend: no record written at the unit's stop"
	r=$(range0)
	[ "${r% *}" -le $((TOUCH + MIB)) ] || fail "$backend: recorded ${r% *} bytes of $F, touched $TOUCH"
	grep -q " $F\$" "$REC" && [ "$(grep -c "^range" "$REC")" -ge 1 ] || fail "$backend: record lacks $F"
	pass "$backend: recorded ${r% *} bytes of $F at offset 0 (touched $TOUCH), heat ${r#* }"

	# 2. Evicted, started again without touching it: read back before
	# any use, the recorded range only.
	wait_until 5 evicted || skip "$backend: posix_fadvise(DONTNEED) did not evict $F ($(resident 0 "$SIZE") pages stay)"
	n_rep=$(count_events PREWARM_REPLAYED EXECGUARD_UNIT="'$A'")
	rm -f "$T/touched"
	run_in "$S/$A" "$PY" "$PC" run "$F" 0 "$T/touched"
	p=$LAST_PID
	wait_until 20 events_newer "$n_rep" PREWARM_REPLAYED EXECGUARD_UNIT="'$A'" || fail "$backend: no replay at the unit's start"
	wait_until 20 touched_back || fail "$backend: $(resident 0 "$TOUCH") of $(pages 0 "$TOUCH") recorded pages resident after the replay"
	[ "$(resident "$FAR" "$SIZE")" = 0 ] ||
		fail "$backend: $(resident "$FAR" "$SIZE") pages beyond the recorded range read back"
	bytes=$(last_event PREWARM_REPLAYED EXECGUARD_UNIT="'$A'" | bytes_of)
	[ "${bytes:-0}" -ge $((TOUCH * 9 / 10)) ] || fail "$backend: replay says it read ${bytes:-?} bytes"
	pass "$backend: replay read $bytes bytes; $(resident 0 "$TOUCH")/$(pages 0 "$TOUCH") touched pages resident, 0 of the $(pages "$FAR" "$SIZE") far ones"
	[ "$(prewarm_field replays)" -ge 1 ] && [ "$(prewarm_field replayed_bytes)" -ge $((TOUCH * 9 / 10)) ] &&
		[ "$(prewarm_field recorded_files)" -ge 1 ] ||
		fail "$backend: execguardctl --json status: $(ctl --json status)"
	ctl status | grep -q "^$A " || fail "$backend: no prewarm row in execguardctl status: $(ctl status)"
	pass "$backend: execguardctl status shows the record and the replay"
	# A run is recorded once it was sampled (a run too short for a
	# round leaves the record as it was): its first round rewrites it.
	touch "$T/stamp"
	wait_until 20 test "$REC" -nt "$T/stamp" || fail "$backend: the second run was not sampled"
	n_rec=$(count_events PREWARM_RECORDED EXECGUARD_UNIT="'$A'")
	kill_own -TERM "$p"
	wait_until 10 events_newer "$n_rec" PREWARM_RECORDED EXECGUARD_UNIT="'$A'" || fail "$backend: no record at the second stop"

	# 2b. The unit's PrewarmBudget=: a replay reads at most that, the
	# 4 MiB range of the text (which does not fit) not at all.
	cat >> "$T/etc/execguard.conf" <<CONF
PrewarmBudget=1M
CONF
	n_rec=$(count_events POLICY_LOADED)
	kill -HUP "$DAEMON_PID"
	wait_until 10 events_newer "$n_rec" POLICY_LOADED || fail "$backend: reload not done"
	wait_until 5 evicted || skip "$backend: posix_fadvise(DONTNEED) did not evict $F"
	n_rep=$(count_events PREWARM_REPLAYED EXECGUARD_UNIT="'$A'")
	run_in "$S/$A" "$PY" "$PC" run "$F" 0 "$T/touched"
	p=$LAST_PID
	wait_until 20 events_newer "$n_rep" PREWARM_REPLAYED EXECGUARD_UNIT="'$A'" || fail "$backend: no replay under the budget"
	bytes=$(last_event PREWARM_REPLAYED EXECGUARD_UNIT="'$A'" | bytes_of)
	[ "${bytes:-0}" -le "$MIB" ] || fail "$backend: read $bytes bytes under PrewarmBudget=1M"
	[ "$(resident 0 "$SIZE")" = 0 ] || fail "$backend: the 4 MiB range was read under PrewarmBudget=1M"
	pass "$backend: PrewarmBudget=1M: read $bytes bytes, not the 4 MiB range"
	kill_own -TERM "$p"
	# Gone for the daemon too before the next start (else that is not
	# the unit's first process, and no replay is due).
	wait_until 10 no_processes || fail "$backend: the daemon still counts a process of $A"
	sed -i '/^PrewarmBudget=1M$/d' "$T/etc/execguard.conf"
	n_rec=$(count_events POLICY_LOADED)
	kill -HUP "$DAEMON_PID"
	wait_until 10 events_newer "$n_rec" POLICY_LOADED || fail "$backend: reload not done"

	# 3. An upgrade: the file replaced. Its old ranges are not read.
	python3 "$PC" make "$F.new" 64 || fail "cannot write the new text file"
	mv -f "$F.new" "$F"
	wait_until 5 evicted || skip "$backend: posix_fadvise(DONTNEED) did not evict the new $F"
	n_rep=$(count_events PREWARM_REPLAYED EXECGUARD_UNIT="'$A'")
	run_in "$S/$A" "$PY" "$PC" run "$F" 0 "$T/touched"
	p=$LAST_PID
	wait_event 20 PREWARM_INVALIDATED EXECGUARD_UNIT="'$A'" EXECGUARD_EXE="'$F'" || fail "$backend: replaced file not reported as changed"
	wait_until 20 events_newer "$n_rep" PREWARM_REPLAYED EXECGUARD_UNIT="'$A'" || fail "$backend: no replay after the upgrade"
	[ "$(resident 0 "$SIZE")" = 0 ] || fail "$backend: $(resident 0 "$SIZE") pages of the new file read from the old record"
	[ "$(prewarm_field invalidated_files)" -ge 1 ] || fail "$backend: --json status does not count the changed file"
	grep -q " $F\$" "$REC" && fail "$backend: the changed file is still on record"
	pass "$backend: upgrade: the replaced file reported changed, not read, dropped from the record"
	kill_own -TERM "$p"
	stop_daemon || fail "$backend: daemon exited with $?"
	has_event PREWARM_RECORD_INVALID && fail "$backend: a record was found broken"
	grep -iq "sanitizer" "$T/daemon.log" && fail "$backend: a sanitizer report in the log"
	pass "$backend: clean stop"
}

scenario kernel --cgroup-root="$T/cgroot"
scenario lock

# A record that cannot be parsed is dropped with a message, never a crash.
REC=$T/prewarm-lock/$A.prewarm
printf 'execguard-prewarm 1\nunit %s\ntime 1\nfile 8:1 1 10 1.000000000 /x\nrange 4 80 1\nend 1 1\n' "$A" > "$REC"
write_conf <<CONF
[Daemon]
Backend=none
[Rule web]
MatchUnit=$A
Protect=yes
Prewarm=yes
# Processes followed: a rule that names executables (MatchExe=) keeps
# the kernel backend on the process path this test is about.
[Rule processes]
MatchExe=*
CONF
: > "$T/daemon.log"
start_daemon --prewarm-dir="$T/prewarm-lock"
wait_event 5 PREWARM_RECORD_INVALID || fail "a broken record was not reported"
[ -e "$REC" ] && fail "the broken record was not removed"
stop_daemon || fail "daemon exited with $? after a broken record"
pass "a broken record is dropped with PREWARM_RECORD_INVALID"
