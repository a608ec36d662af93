#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the VM (started by run.sh): every mode, REPS times, under one
# LRU, results to /results/LRU/MODE-REP/. Not meant to be run by hand.
#
# Usage: vm-bench.sh LRU "MODES" REPS UNLOADED_SEC PRESSURE_SEC ROOM_MIB DAEMON [COLD_PER_MILLE]
set -u
LRU=$1 MODES=$2 REPS=$3 UNLOADED=$4 PRESSURE=$5 ROOM=$6 DAEMON=$7 COLD=${8:-50}
S=/mnt/scratch CG=/sys/fs/cgroup R=/results/$LRU
mkdir -p "$R"
log() { echo "vm-bench: $*"; }

case $LRU in
classic) echo n >/sys/kernel/mm/lru_gen/enabled ;;
mglru) echo y >/sys/kernel/mm/lru_gen/enabled ;;
esac
log "lru_gen $(cat /sys/kernel/mm/lru_gen/enabled)"
echo +memory >$CG/cgroup.subtree_control
mkdir -p $CG/bench $CG/load $CG/daemon
echo $$ >$CG/load/cgroup.procs

mkdir -p /run/eg
cat >/run/eg/execguard.conf <<CONF
[Daemon]
Backend=lock
[Rule bench]
MatchCgroup=/bench
Protect=yes
CONF
chmod 0644 /run/eg/execguard.conf
# the same, with the give-back off: no reserve (PressureReserve=0), and
# a PSI stall of 9.9 s in a 10 s window (the longest) is never reached
mkdir -p /run/eg-pin
sed 's/^Backend=lock$/Backend=lock\nPressureWindowMSec=10000\nPressureStallMSec=9900\nPressureReserve=0/' \
	/run/eg/execguard.conf >/run/eg-pin/execguard.conf
chmod 0644 /run/eg-pin/execguard.conf
# auto: nothing configured for the service; every cgroup is watched and
# the kernel backend protects the ones that suffer (Protect=auto). A
# sampling interval of 1 s and a 10 s window: the pressure phase is short.
mkdir -p /run/eg-auto
cat >/run/eg-auto/execguard.conf <<CONF
[Daemon]
Backend=kernel
AutoIntervalSec=1
AutoWindowSec=10
[Rule all]
MatchCgroup=/*
Protect=auto
CONF
chmod 0644 /run/eg-auto/execguard.conf

sync; echo 3 >/proc/sys/vm/drop_caches; sleep 1
avail=$(awk '/^MemAvailable:/ {print int($2/1024)}' /proc/meminfo)
LOCK=$((avail - ROOM))
{
	echo "lru=$LRU"
	echo "lru_gen=$(cat /sys/kernel/mm/lru_gen/enabled)"
	echo "mem_total_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
	echo "mem_available_mib=$avail"
	echo "lock_mib=$LOCK"
	echo "room_mib=$ROOM"
	echo "read_ahead_kb=$(cat /sys/block/vda/queue/read_ahead_kb)"
	echo "swap_kb=$(awk '/^SwapTotal:/ {print $2}' /proc/meminfo)"
	echo "kernel=$(uname -r)"
} >"$R/setup"
log "MemAvailable $avail MiB: locking $LOCK MiB, $ROOM MiB left"

snap() { # DIR NAME
	cp /proc/vmstat "$1/$2.vmstat"
	cp /proc/pressure/memory "$1/$2.psi"
	cp /proc/pressure/io "$1/$2.psi-io"
	cp /proc/meminfo "$1/$2.meminfo"
	cp $CG/bench/memory.stat "$1/$2.bench-stat"
	cp $CG/bench/memory.events "$1/$2.bench-events"
}
vmlck() { awk '/^VmLck:/ {print $2 * 1024}' /proc/$1/status 2>/dev/null || echo 0; }

run_one() { # MODE REP
	local mode=$1 rep=$2 d=$R/$1-$2 svc helper='' lockp streamp
	# MGLRU's own protection of the working set: nothing to run without it
	case $mode in minttl|protminttl) [ "$LRU" != mglru ] && return 0 ;; esac
	mkdir -p "$d"
	log "run $LRU $mode $rep"
	sync; echo 3 >/proc/sys/vm/drop_caches; sleep 1
	rm -f /run/svc.ready
	sh -c "echo \$\$ >$CG/bench/cgroup.procs; exec $S/svc /run/svc.out /run/svc.ready 5000 $COLD $rep$RANDOM" &
	svc=$!
	for _ in $(seq 600); do [ -e /run/svc.ready ] && break; sleep 0.2; done
	[ -e /run/svc.ready ] || { log "svc did not get ready"; kill $svc; return 1; }
	case $mode in
	protect)
		echo max >$CG/bench/memory.exec_protect ;;
	minttl)
		# no eviction of what was used in the last second, for
		# everyone (MGLRU's thrashing protection), before an OOM kill
		echo 1000 >/sys/kernel/mm/lru_gen/min_ttl_ms ;;
	protminttl)
		# both: does keeping the text make kswapd give up on min_ttl
		# sooner and call the OOM killer?
		echo max >$CG/bench/memory.exec_protect
		echo 1000 >/sys/kernel/mm/lru_gen/min_ttl_ms ;;
	lock|lockpin|auto)
		local conf=/run/eg/execguard.conf
		[ "$mode" = lockpin ] && conf=/run/eg-pin/execguard.conf
		[ "$mode" = auto ] && conf=/run/eg-auto/execguard.conf
		sh -c "echo \$\$ >$CG/daemon/cgroup.procs; exec $DAEMON -c $conf --state-dir=/run/execguard --log-target=stderr" \
			>"$d/daemon.log" 2>&1 &
		helper=$!
		sleep 3
		# a daemon that did not start (a bad policy) locks nothing: say so
		kill -0 $helper 2>/dev/null && grep -q "ready:" "$d/daemon.log" ||
			log "execguardd did not start: $(tail -n 3 "$d/daemon.log")" ;;
	mlock)
		$S/press prelock $svc >"$d/prelock.out" &
		helper=$!
		for _ in $(seq 300); do [ -s "$d/prelock.out" ] && break; sleep 0.2; done ;;
	esac
	# auto: when the daemon protected the service, on the clock of its
	# request log (CLOCK_MONOTONIC; /proc/uptime is the same clock here,
	# the VM never suspends), to 50 ms
	local watchp=
	if [ "$mode" = auto ]; then
		( while [ "$(cat $CG/bench/memory.exec_protect)" = 0 ]; do sleep 0.05; done
		  awk '{ print "protected_at_sec=" $1 }' /proc/uptime >"$d/auto" ) &
		watchp=$!
	fi
	sleep "$UNLOADED"
	kill -USR1 $svc
	: >"$d/held"
	[ -n "$helper" ] && echo "held_before=$(vmlck $helper)" >>"$d/held"
	snap "$d" pre
	local t0
	t0=$(date +%s.%N)
	$S/press lock $S/lockfile "$LOCK" >"$d/lock.out" &
	lockp=$!
	$S/press stream $S/stream.dat &
	streamp=$!
	# and a working set that other work keeps re-reading: it is activated
	# and competes with the text on the active list
	$S/press stream $S/ws.dat &
	streamp="$streamp $!"
	# the pressure phase: filling the lock, then PRESSURE seconds of it
	for _ in $(seq 1500); do
		[ -s "$d/lock.out" ] && break
		kill -0 $lockp 2>/dev/null || { echo "lock_killed=1" >>"$d/held"; break; }
		sleep 0.2
	done
	echo "lock_fill_sec=$(echo "$(date +%s.%N) - $t0" | bc)" >>"$d/held"
	sleep "$PRESSURE"
	snap "$d" post
	cp /proc/$svc/status "$d/svc.status" 2>/dev/null
	[ -n "$helper" ] && echo "held_after=$(vmlck $helper)" >>"$d/held"
	echo "lock_vmlck=$(vmlck $lockp)" >>"$d/held"
	cat "$d/lock.out" >>"$d/held"
	kill -TERM $svc; wait $svc
	echo "svc_exit=$? pressure_sec=$(echo "$(date +%s.%N) - $t0" | bc)" >>"$d/held"
	kill $streamp $lockp; wait $streamp $lockp 2>/dev/null
	if [ -n "$helper" ]; then kill -TERM $helper; wait $helper; fi
	[ -n "$watchp" ] && { kill $watchp 2>/dev/null; wait $watchp 2>/dev/null; }
	[ "$mode" = auto ] && grep -a "Protect=auto" "$d/daemon.log" >"$d/auto-decisions" 2>/dev/null
	echo 0 >$CG/bench/memory.exec_protect
	echo 0 >/sys/kernel/mm/lru_gen/min_ttl_ms
	cp /run/svc.out "$d/requests"; cp /run/svc.out.text "$d/text"
	rm -f $S/lockfile
	dmesg | grep -c -i 'killed process' >"$d/oom-dmesg"
	log "done $LRU $mode $rep: $(wc -l <"$d/requests") requests"
}

for rep in $(seq "$REPS"); do
	for mode in $MODES; do
		run_one "$mode" "$rep"
	done
done
dmesg >"$R/dmesg"
