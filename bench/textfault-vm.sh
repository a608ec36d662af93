#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the VM (started by textfault-validate.sh): bench/pressure's
# service in /bench, unprotected, under its pressure, while the probe
# samples /bench with the forced estimate and the kernel's counter.
# Results to /results/LRU/. Not meant to be run by hand.
#
# Usage: textfault-vm.sh LRU PRESSURE_SEC ROOM_MIB COLD_PER_MILLE INTERVAL_MS PROBE CASE
# CASE: text (the service alone) or mixed (and a data reader beside it).
set -u
LRU=$1 PRESSURE=$2 ROOM=$3 COLD=$4 INTERVAL=$5 PROBE=$6 CASE=${7:-text}
S=/mnt/scratch CG=/sys/fs/cgroup R=/results/$LRU-$CASE
mkdir -p "$R"
log() { echo "textfault-vm: $*"; }

case $LRU in
classic) echo n >/sys/kernel/mm/lru_gen/enabled ;;
mglru) echo y >/sys/kernel/mm/lru_gen/enabled ;;
esac
log "lru_gen $(cat /sys/kernel/mm/lru_gen/enabled) kernel $(uname -r)"
echo +memory >$CG/cgroup.subtree_control
mkdir -p $CG/bench $CG/load $CG/probe
echo $$ >$CG/load/cgroup.procs
grep -q '^pgmajfault_exec ' $CG/bench/memory.stat || { log "no pgmajfault_exec: not the execguard kernel"; exit 1; }

sync; echo 3 >/proc/sys/vm/drop_caches; sleep 1
avail=$(awk '/^MemAvailable:/ {print int($2/1024)}' /proc/meminfo)
LOCK=$((avail - ROOM))
log "MemAvailable $avail MiB: locking $LOCK MiB, $ROOM MiB left"

rm -f /run/svc.ready
sh -c "echo \$\$ >$CG/bench/cgroup.procs; exec $S/svc /run/svc.out /run/svc.ready 5000 $COLD 1" &
svc=$!
for _ in $(seq 600); do [ -e /run/svc.ready ] && break; sleep 0.2; done
[ -e /run/svc.ready ] || { log "svc did not get ready"; kill $svc; exit 1; }
data=
if [ "$CASE" = mixed ]; then
	sh -c "echo \$\$ >$CG/bench/cgroup.procs; exec $S/textfault-data $S/data.dat 20" &
	data=$!
fi
# The probe in a cgroup of its own: its reads are not the service's.
sh -c "echo \$\$ >$CG/probe/cgroup.procs; exec $PROBE --estimate --interval $INTERVAL /bench" >"$R/probe.out" 2>&1 &
probe=$!
sleep $((INTERVAL * 3 / 1000 + 1))
kill -USR1 $svc
cp $CG/bench/memory.stat "$R/pre.bench-stat"
# The last sample before the pressure: the comparison starts there.
grep -c '^sample ' "$R/probe.out" | awk '{ print $1 - 1 }' >"$R/pressure-start-sample"
t0=$(date +%s)
$S/press lock $S/lockfile "$LOCK" >"$R/lock.out" &
lockp=$!
$S/press stream $S/stream.dat &
streamp=$!
$S/press stream $S/ws.dat &
streamp="$streamp $!"
for _ in $(seq 1500); do
	[ -s "$R/lock.out" ] && break
	kill -0 $lockp 2>/dev/null || break
	sleep 0.2
done
log "lock filled after $(($(date +%s) - t0)) s"
sleep "$PRESSURE"
# One more sample under pressure, then stop.
sleep $((INTERVAL / 1000 + 1))
kill -TERM $probe; wait $probe
cp $CG/bench/memory.stat "$R/post.bench-stat"
kill -TERM $svc; wait $svc
[ -n "$data" ] && { kill $data; wait $data 2>/dev/null; }
kill $streamp $lockp; wait $streamp $lockp 2>/dev/null
cp /run/svc.out "$R/requests" 2>/dev/null
rm -f $S/lockfile
log "done $LRU $CASE: $(grep -c '^sample ' "$R/probe.out") samples; last: $(grep '^sample ' "$R/probe.out" | tail -n 1)"
