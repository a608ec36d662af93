#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs inside the VM (systemd as PID 1), started by bench/real/run.sh: for
# each rep, shape, service and mode (modes alternate within a rep), one
# cell, results to /results/LRU/SERVICE/SHAPE/MODE-REP/. A cell with a
# "done" file is skipped (runs resume). Not meant to be run by hand.
#
# Usage: inside.sh CONFIG   (a file of NAME=VALUE lines written by run.sh)
set -u
# shellcheck disable=SC1090
. "$1"
S=/mnt/scratch CG=/sys/fs/cgroup B=$S/bin
log() { echo "real: $*"; }
now() { date +%s.%N | cut -c1-14; }

case $LRU in
classic) echo n >/sys/kernel/mm/lru_gen/enabled ;;
mglru) echo y >/sys/kernel/mm/lru_gen/enabled ;;
esac
log "lru $LRU lru_gen $(cat /sys/kernel/mm/lru_gen/enabled) kernel $(uname -r)"
mkdir -p "/results/$LRU"
{
	echo "kernel=$(uname -r)"
	echo "lru_gen=$(cat /sys/kernel/mm/lru_gen/enabled)"
	echo "mem_total_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)"
	echo "swap_kb=$(awk '/^SwapTotal:/ {print $2}' /proc/meminfo)"
	echo "read_ahead_kb=$(cat /sys/block/vda/queue/read_ahead_kb)"
	echo "exec_protect_file=$([ -e $CG/system.slice/memory.exec_protect ] && echo yes || echo no)"
} >"/results/$LRU/setup"

# The services' programs and libraries live on the throttled disk: bind
# them over their paths, so that every re-read of their pages waits on it
# (as on slow storage), not on the host's page cache behind 9p.
n=0
while read -r f; do
	[ -e "$f" ] && mount --bind "$S/root$f" "$f" && n=$((n + 1))
done <"$S/files.list"
log "$n files bound from the throttled disk"

# --- units -------------------------------------------------------------------
mkdir -p /run/systemd/system
unit() { # NAME EXECSTART [EXTRA LINES]
	cat >"/run/systemd/system/$1.service" <<UNIT
[Unit]
Description=bench/real $1
[Service]
Slice=bench.slice
MemoryAccounting=yes
ExecStart=$2
$3
UNIT
}
unit bench-pg "/usr/lib/postgresql/15/bin/postgres -D $S/pgdata -c config_file=$S/conf/postgresql.conf" \
	"Type=notify
User=postgres
RuntimeDirectory=bench-pg
KillMode=mixed
KillSignal=SIGINT
TimeoutStartSec=600"
unit bench-nginx "/usr/sbin/nginx -c $S/conf/nginx.conf -g 'daemon off;'" "RuntimeDirectory=bench-nginx"
# one unit, one cgroup: nginx and fcgiwrap, which forks a shell per
# request that runs openssl version and head
unit bench-cgi "/bin/sh -c '/usr/sbin/fcgiwrap -c 2 -s unix:/run/bench-cgi/fcgi.sock & exec /usr/sbin/nginx -c $S/conf/nginx-cgi.conf -g \"daemon off;\"'" \
	"RuntimeDirectory=bench-cgi"
# pysvc: Debian's interpreter, the script on the throttled disk
unit bench-py "/usr/bin/python3.11 -B $S/bin/pysvc.py 8080 /run/bench-py/access.log" \
	"Type=notify
RuntimeDirectory=bench-py
TimeoutStartSec=600"
cat >/run/systemd/system/bench.slice <<UNIT
[Slice]
MemoryAccounting=yes
UNIT
cat >/run/systemd/system/pressure.slice <<UNIT
[Slice]
MemoryAccounting=yes
UNIT
systemctl daemon-reload

unit_of() { case $1 in pgro|pgtpcb) echo bench-pg ;; nginx) echo bench-nginx ;; cgi) echo bench-cgi ;; py) echo bench-py ;; esac; }

# --- the clients (outside the service's cgroup: this unit's) ----------------
# client SVC DIR SECONDS: per-request log in DIR, summary in DIR/client.out
client() {
	local svc=$1 d=$2 sec=$3
	case $svc in
	pgro|pgtpcb)
		local opts=(-S -R "$PG_RATE_RO") tag=ro
		[ "$svc" = pgtpcb ] && opts=(-R "$PG_RATE_TPCB") tag=tpcb
		(cd "$d" && pgbench -h /run/bench-pg -U postgres -n "${opts[@]}" -c 2 -j 1 -T "$sec" \
			--log --log-prefix="pgbench-$tag" postgres >"$d/client.out" 2>"$d/client.err")
		;;
	nginx|cgi|py)
		local url conns=1 delay log
		case $svc in
		nginx) url=http://127.0.0.1:8080/index.html conns=2 delay=$NGINX_DELAY_MS log=/run/bench-nginx/access.log ;;
		cgi) url=http://127.0.0.1:8080/cgi delay=$CGI_DELAY_MS log=/run/bench-cgi/access.log ;;
		py) url=http://127.0.0.1:8080/api delay=$PY_DELAY_MS log=/run/bench-py/access.log ;;
		esac
		: >"$log"
		WRK_OUT=$d/client.out DELAY_MS=$delay wrk -t1 -c"$conns" -d"${sec}s" --timeout 30s -s $S/conf/report.lua \
			"$url" >"$d/wrk.txt" 2>&1
		# nginx writes its buffered log lines out within a second
		sleep 1.5
		cp "$log" "$d/access.log"
		;;
	esac
}

# --- one cell -------------------------------------------------------------------
snap() { # DIR NAME
	cp /proc/vmstat "$1/$2.vmstat"
	cp /proc/meminfo "$1/$2.meminfo"
	cp /proc/pressure/memory "$1/$2.psi"
	cp "$SCG/memory.stat" "$1/$2.svc-stat" 2>/dev/null
	cp "$SCG/memory.events" "$1/$2.svc-events" 2>/dev/null
	cp "$CG/bench.slice/memory.events" "$1/$2.slice-events" 2>/dev/null
	cp "$CG/pressure.slice/memory.events" "$1/$2.pressure-events" 2>/dev/null
}
# the locked memory of the service's processes (mlockall) and the daemon's
vmlck_cg() { # CGROUP_DIR
	local pid sum=0
	for pid in $(cat "$1"/cgroup.procs "$1"/*/cgroup.procs 2>/dev/null); do
		sum=$((sum + $(awk '/^VmLck:/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)))
	done
	echo $((sum * 1024))
}
warm_bound() { # SEGRES PERMS|any
	# the resident KiB of the segments with these permissions (cgsegres:
	# column 2 the permissions, 4 the resident KiB), plus a quarter for
	# what the warm-up did not touch, in bytes, rounded up to whole pages
	awk -v perms="$2" '$2 == perms || perms == "any" {s += $4}
		END {print int((s * 5 / 4 + 3) / 4) * 4096}' "$1"
}

reset_knobs() {
	local c
	for c in "$CG/bench.slice" "$CG"/bench.slice/*.service; do
		[ -d "$c" ] || continue
		echo 0 >"$c/memory.low"; echo 0 >"$c/memory.min"
		[ -e "$c/memory.exec_protect" ] && echo 0 >"$c/memory.exec_protect"
	done
	[ -e /sys/kernel/mm/lru_gen/min_ttl_ms ] && echo 0 >/sys/kernel/mm/lru_gen/min_ttl_ms
	[ "$(cat "$CG/bench.slice/memory.max" 2>/dev/null)" = max ] ||
		systemctl set-property --runtime bench.slice MemoryMax=infinity
}
stop_all() {
	local x units=
	for x in bench-hog bench-stream eg-lock bench-pg bench-nginx bench-cgi bench-py; do
		systemctl -q is-active "$x" && units="$units $x"
	done
	# shellcheck disable=SC2086
	[ -n "$units" ] && systemctl stop $units
	systemctl reset-failed 2>/dev/null
	if ls -d /run/systemd/system/bench-*.service.d >/dev/null 2>&1; then
		rm -rf /run/systemd/system/bench-*.service.d
		systemctl daemon-reload
	fi
	reset_knobs
}

# mode_skipped MODE: the mode makes no sense here (min_ttl_ms is MGLRU's;
# exec_protect needs the patched kernel): skipped, and said so once
mode_skipped() {
	local why=
	case $1 in
	ttl*|epttl) [ "$LRU" != mglru ] && why="min_ttl_ms is MGLRU's" ;;
	esac
	case $1 in
	ep*) [ -e "$CG/system.slice/memory.exec_protect" ] || why="no memory.exec_protect in this kernel" ;;
	esac
	[ -z "$why" ] && return 1
	grep -qx "$1: $why" "/results/$LRU/skipped" 2>/dev/null || echo "$1: $why" >>"/results/$LRU/skipped"
	return 0
}

cell() { # SVC SHAPE MODE REP
	local svc=$1 shape=$2 mode=$3 rep=$4
	local d=/results/$LRU/$svc/$shape/$mode-$rep u
	[ -e "$d/done" ] && return 0
	mode_skipped "$mode" && return 0
	rm -rf "$d"; mkdir -p "$d"
	u=$(unit_of "$svc")
	local perreq=
	[ "$svc" = cgi ] && perreq=$PERREQ_CGI
	SCG=$CG/bench.slice/$u.service
	log "cell $LRU $svc $shape $mode $rep: start"
	local t_start; t_start=$(now)
	stop_all >/dev/null 2>&1
	sync; echo 3 >/proc/sys/vm/drop_caches; sleep 1
	# dmesg's OOM reports so far: the cell's are the ones after
	local oom0; oom0=$(dmesg | grep -c 'Killed process')

	if [ "$mode" = mlockall ]; then
		mkdir -p "/run/systemd/system/$u.service.d"
		cat >"/run/systemd/system/$u.service.d/mlock.conf" <<CONF
[Service]
Environment=LD_PRELOAD=$B/eg-mlockall.so
LimitMEMLOCK=infinity
CONF
		systemctl daemon-reload
	fi
	if ! systemctl start "$u"; then
		log "cell $svc: $u did not start"; journalctl -u "$u" --no-pager | tail -n 20
		echo "error=service did not start" >"$d/meta"; return 1
	fi
	# warm: the service's working set, unloaded
	client "$svc" "$d" "$WARM" ; mkdir -p "$d/warm"; mv "$d"/pgbench-* "$d/client.out" "$d/access.log" "$d/warm/" 2>/dev/null
	local ws_kb file_kb anon_kb avail_mib
	ws_kb=$(($(cat "$SCG/memory.current") / 1024))
	file_kb=$(awk '$1 == "file" {print int($2 / 1024)}' "$SCG/memory.stat")
	anon_kb=$(awk '$1 == "anon" {print int($2 / 1024)}' "$SCG/memory.stat")
	avail_mib=$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)
	$B/cgsegres "$SCG" $perreq >"$d/segres-warm" 2>/dev/null
	# what the service's images hold now (meta's img_kb_warm)
	local img_kb; img_kb=$(awk '{s += $4} END {print s + 0}' "$d/segres-warm")

	# pressure sizes: fixed per LRU, service and shape (first cell), so
	# every mode meets the same pressure
	local sizes=/results/$LRU/$svc/$shape/sizes hog spike=0 slicemax=
	if [ ! -s "$sizes" ]; then
		case $shape in
		moderate) echo "hog_mib=$((avail_mib - ROOM_MODERATE))" ;;
		severe) echo "hog_mib=$((avail_mib - ROOM_SEVERE))" ;;
		slice|spike)
			echo "slicemax_mib=$((ws_kb / 1024 + SLICE_HOG + ROOM_SLICE))"
			echo "hog_mib=$SLICE_HOG" ;;
		unloaded) echo "hog_mib=0" ;;
		esac >"$sizes"
		echo "ws_kb_first=$ws_kb" >>"$sizes"
	fi
	hog=$(sed -n 's/^hog_mib=//p' "$sizes")
	slicemax=$(sed -n 's/^slicemax_mib=//p' "$sizes")
	[ "$shape" = spike ] && spike=$((ROOM_SLICE + ws_kb / 2048))

	# the mode
	local bound=0
	case $mode in
	low) echo "$((ws_kb * 1024))" >"$CG/bench.slice/memory.low"; echo "$((ws_kb * 1024))" >"$SCG/memory.low" ;;
	lowmax) echo max >"$CG/bench.slice/memory.low"; echo max >"$SCG/memory.low" ;;
	min) echo "$((ws_kb * 1024))" >"$CG/bench.slice/memory.min"; echo "$((ws_kb * 1024))" >"$SCG/memory.min" ;;
	ttl250|ttl1000|ttl5000) echo "${mode#ttl}" >/sys/kernel/mm/lru_gen/min_ttl_ms ;;
	epmax) echo max >"$CG/bench.slice/memory.exec_protect"; echo max >"$SCG/memory.exec_protect" ;;
	epbound)
		# the service's images as resident after the warm-up
		bound=$(warm_bound "$d/segres-warm" any)
		echo max >"$CG/bench.slice/memory.exec_protect"; echo "$bound" >"$SCG/memory.exec_protect" ;;
	eptext)
		# the text alone (r-x segments) as resident after the warm-up:
		# what an operator sizing by the code would set
		bound=$(warm_bound "$d/segres-warm" r-x)
		echo max >"$CG/bench.slice/memory.exec_protect"; echo "$bound" >"$SCG/memory.exec_protect" ;;
	epttl)
		echo max >"$CG/bench.slice/memory.exec_protect"; echo max >"$SCG/memory.exec_protect"
		echo 1000 >/sys/kernel/mm/lru_gen/min_ttl_ms ;;
	lock)
		cat >/run/eg-lock.conf <<CONF
[Daemon]
Backend=lock
[Rule bench]
MatchUnit=$u.service
Protect=yes
CONF
		systemd-run --quiet --unit=eg-lock -p MemoryAccounting=yes -p StandardOutput=file:"$d/daemon.log" \
			-p StandardError=file:"$d/daemon.log" \
			"$DAEMON" -c /run/eg-lock.conf --state-dir=/run/execguard --log-target=stderr
		for _ in $(seq 100); do grep -q "ready:" "$d/daemon.log" 2>/dev/null && break; sleep 0.2; done
		grep -q "ready:" "$d/daemon.log" || log "execguardd did not start: $(tail -n 3 "$d/daemon.log")"
		sleep 3 ;;
	esac
	[ -n "$slicemax" ] && systemctl set-property --runtime bench.slice MemoryMax="${slicemax}M"

	# the pressure
	local pslice=pressure.slice
	case $shape in slice|spike) pslice=bench.slice ;; esac
	local t_press; t_press=$(now)
	local kswapd; kswapd=$(pgrep -x kswapd0 | head -n1)
	$B/sampler "$SAMPLE_MS" "$d/samples" svc="$SCG/memory.stat" svcev="$SCG/memory.events" \
		svccur="$SCG/memory.current" slice="$CG/bench.slice/memory.events" \
		press="$CG/pressure.slice/memory.events" vm=/proc/vmstat cpu=/proc/stat \
		psi=/proc/pressure/memory kswapd="/proc/$kswapd/stat" &
	local samp=$!
	snap "$d" pre
	if [ "$shape" != unloaded ]; then
		local hogargs=("$hog")
		[ "$spike" -gt 0 ] && hogargs=("$hog" "$spike" "$SPIKE_AFTER" "$SPIKE_HOLD")
		systemd-run --quiet --unit=bench-hog --slice="$pslice" -p MemoryAccounting=yes \
			-p StandardOutput=file:"$d/hog.out" $B/hog "${hogargs[@]}"
		systemd-run --quiet --unit=bench-stream --slice="$pslice" -p MemoryAccounting=yes \
			/bin/sh -c "while :; do cat $S/stream.dat >/dev/null; done"
		for _ in $(seq 1500); do
			grep -q filled "$d/hog.out" 2>/dev/null && break
			systemctl is-active --quiet bench-hog || { log "the hog died while filling"; break; }
			sleep 0.2
		done
		sleep "$SETTLE"
	fi
	local t_meas; t_meas=$(now)
	local lck0; lck0=$(vmlck_cg "$SCG")
	client "$svc" "$d" "$DURATION"
	local t_end; t_end=$(now)
	snap "$d" post
	$B/cgsegres "$SCG" $perreq >"$d/segres" 2>/dev/null
	local lck1 dlck=0
	lck1=$(vmlck_cg "$SCG")
	[ "$mode" = lock ] && dlck=$(vmlck_cg "$CG/system.slice/eg-lock.service")
	kill "$samp"; wait "$samp" 2>/dev/null
	local hog_state; hog_state=$(systemctl show -p ActiveState --value bench-hog)
	{
		echo "lru=$LRU"; echo "service=$svc"; echo "shape=$shape"; echo "mode=$mode"; echo "rep=$rep"
		echo "t_start=$t_start"; echo "t_pressure=$t_press"; echo "t_measure=$t_meas"; echo "t_end=$t_end"
		echo "ws_kb=$ws_kb"; echo "file_kb=$file_kb"; echo "anon_kb=$anon_kb"; echo "avail_mib_warm=$avail_mib"
		echo "img_kb_warm=$img_kb"; echo "hog_mib=$hog"; echo "spike_mib=$spike"; echo "slicemax_mib=$slicemax"
		echo "exec_protect_bound=$bound"; echo "svc_vmlck_before=$lck0"; echo "svc_vmlck_after=$lck1"
		echo "daemon_vmlck_after=$dlck"; echo "svc_current_end=$(cat "$SCG/memory.current" 2>/dev/null)"
		echo "hog_state_end=$hog_state"; echo "svc_state_end=$(systemctl show -p ActiveState --value "$u")"
		echo "svc_nrestarts=$(systemctl show -p NRestarts --value "$u")"
		echo "oom_dmesg=$(($(dmesg | grep -c 'Killed process') - oom0))"
		echo "duration=$DURATION"; echo "sample_ms=$SAMPLE_MS"
	} >"$d/meta"
	dmesg | grep -a 'Killed process' | tail -n +$((oom0 + 1)) >"$d/oom-kills"
	[ "$(systemctl show -p ActiveState --value "$u")" = active ] ||
		journalctl -u "$u" --no-pager -o short-monotonic --since "@${t_start%.*}" >"$d/journal" 2>/dev/null
	stop_all >/dev/null 2>&1
	# raw data is committed: keep it small
	gzip -f "$d/samples" "$d"/pgbench-* "$d/access.log" "$d"/warm/pgbench-* "$d/warm/access.log" 2>/dev/null
	: >"$d/done"
	log "cell $LRU $svc $shape $mode $rep: done in $(awk -v a="$(now)" -v b="$t_start" 'BEGIN {printf "%.0f", a - b}') s"
}

for rep in $(seq "$REP_FIRST" "$REPS"); do
	for shape in $SHAPES; do
		for svc in $SERVICES; do
			# the unloaded baseline of each service, once a rep
			[ "$BASELINE" = 1 ] && cell "$svc" unloaded none "$rep"
			for mode in $MODES; do
				cell "$svc" "$shape" "$mode" "$rep"
			done
		done
	done
done
dmesg >"/results/$LRU/dmesg"
log "all cells done"
