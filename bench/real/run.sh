#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# bench/real: execguard against the alternatives a user already has, on
# real Debian services (issue 29, and issue 36's bench), in a qemu VM with
# systemd as PID 1. Each service is its own unit in bench.slice; its client
# runs outside that cgroup and logs every request.
#
# Services: pgro    PostgreSQL 15, pgbench select-only (-S -R rate)
#           pgtpcb  PostgreSQL 15, pgbench's TPC-B-like script (-R rate)
#           nginx   nginx 1.22, a static page, wrk (paced by its Lua delay)
#           cgi     nginx + fcgiwrap: a shell per request that runs openssl
#                   version and head (processes started per request), wrk
#           py      pysvc.py: an HTTP API in Python with C extensions loaded
#                   (17 MB of code in 29 images, most of it run rarely), wrk
# Shapes:   moderate  an anonymous hog (no swap) leaves --room-moderate MiB of
#                     MemAvailable, machine-wide, plus a page-cache stream
#           severe    the same with --room-severe MiB
#           slice     hog and stream in bench.slice with the service, under
#                     MemoryMax = the service's warm size + hog + --room-slice
#           spike     slice, and the hog grows past the service's room for
#                     --spike-hold s (stall, breach or OOM kill; recovery)
# Modes:    none lowmax low min lock mlockall ttl250 ttl1000 ttl5000
#           epmax epbound eptext epttl  (see README.md; ttl* and epttl: MGLRU only;
#           ep*: a kernel with memory.exec_protect only)
# Each cell: drop caches, start the service, --warm s of its client, apply
# the mode, start the pressure, --settle s, then --duration s measured.
# An unloaded cell per service and rep is the baseline. Cells already done
# under --out are skipped: rerun the same command to resume.
#
# Usage: bench/real/run.sh [--quick] [--services "pgro pgtpcb nginx cgi py"]
#          [--shapes "moderate severe slice spike"] [--modes "..."]
#          [--lrus "classic mglru"] [--reps N] [--rep-first N] [--duration SEC]
#          [--warm SEC] [--settle SEC] [--room-moderate MIB] [--room-severe MIB]
#          [--room-slice MIB] [--slice-hog MIB] [--spike-after SEC] [--spike-hold SEC]
#          [--mem SIZE] [--bps BYTES/S] [--iops N] [--no-baseline]
#          [--kernel BZIMAGE] [--tag NAME] [--out DIR] [--no-analyze] [--prepare]
# --prepare: only build the disk image's tree (services, data, helpers).
# --quick: one cell (pgro, moderate, none, MGLRU, 1 rep, 20 s) and its
#   baseline, into bench/real/results/quick: meant for under 10 minutes;
#   it took 14 (the VM 804 s) on the shared host at load 17-23.
# The kernel is --kernel, else $EXECGUARD_BZIMAGE. Results go to --out
# (default bench/real/results/TAG, TAG from --tag, default the kernel's
# release string); analyze.py makes OUT/results.md and OUT/cdf-*.png.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
SERVICES="pgro pgtpcb nginx cgi py" SHAPES="moderate severe slice spike"
MODES="none lowmax low min lock mlockall ttl250 ttl1000 ttl5000 epmax epbound eptext epttl"
LRUS="classic mglru" REPS=5 REP_FIRST=1 DURATION=30 WARM=8 SETTLE=3
ROOM_MODERATE=48 ROOM_SEVERE=24 ROOM_SLICE=16 SLICE_HOG=64 SPIKE_AFTER=10 SPIKE_HOLD=5
MEM=1G BPS=20000000 IOPS=200 BASELINE=1 PREPARE=0 KERNEL=${EXECGUARD_BZIMAGE:-} TAG='' OUT='' ANALYZE=1
CMDLINE=$(printf '%q ' "$0" "$@"); CMDLINE=${CMDLINE% }
usage() { sed -n '3,42s/^# \{0,1\}//p' "$0"; }
while [ $# -gt 0 ]; do
	case $1 in
	--quick) SERVICES=pgro SHAPES=moderate MODES=none LRUS=mglru REPS=1 DURATION=20
		OUT=${OUT:-$HERE/results/quick}; shift; continue ;;
	--no-baseline) BASELINE=0; shift; continue ;;
	--no-analyze) ANALYZE=0; shift; continue ;;
	--prepare) PREPARE=1; shift; continue ;;
	-h|--help) usage; exit 0 ;;
	esac
	[ $# -ge 2 ] || { echo "run.sh: $1 needs a value" >&2; exit 2; }
	case $1 in
	--services) SERVICES=$2 ;; --shapes) SHAPES=$2 ;; --modes) MODES=$2 ;; --lrus) LRUS=$2 ;;
	--reps) REPS=$2 ;; --rep-first) REP_FIRST=$2 ;; --duration) DURATION=$2 ;; --warm) WARM=$2 ;;
	--settle) SETTLE=$2 ;; --room-moderate) ROOM_MODERATE=$2 ;; --room-severe) ROOM_SEVERE=$2 ;;
	--room-slice) ROOM_SLICE=$2 ;; --slice-hog) SLICE_HOG=$2 ;; --spike-after) SPIKE_AFTER=$2 ;;
	--spike-hold) SPIKE_HOLD=$2 ;; --mem) MEM=$2 ;; --bps) BPS=$2 ;; --iops) IOPS=$2 ;;
	--kernel) KERNEL=$2 ;; --tag) TAG=$2 ;; --out) OUT=$2 ;;
	*) echo "run.sh: unknown option $1 (--help)" >&2; exit 2 ;;
	esac
	shift 2
done
for s in $SERVICES; do case $s in pgro|pgtpcb|nginx|cgi|py) ;; *) echo "run.sh: unknown service $s" >&2; exit 2 ;; esac; done
for s in $SHAPES; do case $s in moderate|severe|slice|spike) ;; *) echo "run.sh: unknown shape $s" >&2; exit 2 ;; esac; done
for m in $MODES; do
	case $m in none|lowmax|low|min|lock|mlockall|ttl250|ttl1000|ttl5000|epmax|epbound|eptext|epttl) ;;
	*) echo "run.sh: unknown mode $m" >&2; exit 2 ;; esac
done
for l in $LRUS; do case $l in classic|mglru) ;; *) echo "run.sh: unknown LRU $l" >&2; exit 2 ;; esac; done
[ "$(id -u)" = 0 ] || { echo "run.sh: needs root (qemu, mkfs -d, initdb as postgres)"; exit 77; }
[ "$PREPARE" = 1 ] || { [ -n "$KERNEL" ] && [ -f "$KERNEL" ]; } || { echo "run.sh: no kernel: --kernel BZIMAGE or EXECGUARD_BZIMAGE" >&2; exit 2; }

# bench-only packages (not in tools/deps.sh: no test needs them)
need=()
for p in postgresql-15:/usr/lib/postgresql/15/bin/postgres postgresql-client-15:/usr/bin/pgbench \
	nginx:/usr/sbin/nginx wrk:/usr/bin/wrk fcgiwrap:/usr/sbin/fcgiwrap openssl:/usr/bin/openssl \
	python3-matplotlib:/usr/lib/python3/dist-packages/matplotlib qemu-system-x86:/usr/bin/qemu-system-x86_64 \
	busybox-static:/bin/busybox python3.11:/usr/bin/python3.11; do
	[ -e "${p#*:}" ] || need+=("${p%%:*}")
done
if [ ${#need[@]} -gt 0 ]; then
	echo "run.sh: installing ${need[*]} (the host's services are not started: the VM runs them)"
	# policy-rc.d 101: apt starts nothing on the host
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d; chmod +x /usr/sbin/policy-rc.d
		trap 'rm -f /usr/sbin/policy-rc.d' EXIT
	fi
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${need[@]}" >/dev/null
	rm -f /usr/sbin/policy-rc.d; trap - EXIT
fi

W=/var/tmp/execguard-real
mkdir -p "$W"

# the daemon for the lock mode: this tree's build
DAEMON=$SRC/build/daemon/execguardd
if [ ! -x "$DAEMON" ]; then
	[ -f "$SRC/build/build.ninja" ] || meson setup "$SRC/build" -Dprefix=/usr -Dsysconfdir=/etc -Dlocalstatedir=/var >/dev/null
	ninja -C "$SRC/build" >/dev/null
fi

# --- the disk image: the services' files, their data, the stream ---------------
IMG=$W/img
build_image() {
	echo "run.sh: building the disk image's tree in $IMG (once)"
	rm -rf "$IMG"; mkdir -p "$IMG"/{bin,conf,www,root}
	local cc=(gcc -O2 -Wall -Wextra)
	"${cc[@]}" -o "$IMG/bin/hog" "$HERE/hog.c"
	"${cc[@]}" -o "$IMG/bin/sampler" "$HERE/sampler.c"
	"${cc[@]}" -o "$IMG/bin/cgsegres" "$HERE/cgsegres.c"
	"${cc[@]}" -shared -fPIC -o "$IMG/bin/eg-mlockall.so" "$HERE/eg-mlockall.c"
	cp "$HERE/pysvc.py" "$IMG/bin/"
	# the programs the services run and every library they load
	local progs=(/usr/lib/postgresql/15/bin/postgres /usr/sbin/nginx /usr/sbin/fcgiwrap /usr/bin/dash
		/usr/bin/openssl /usr/bin/head /usr/bin/cat /usr/bin/python3.11) f
	# pysvc's extension modules (not the test, Tk, curses or NIS ones)
	for f in /usr/lib/python3.11/lib-dynload/*.so; do
		case ${f##*/} in _test*|_xx*|xx*|_tkinter*|_curses*|nis.*|ossaudiodev*|readline*|_dbm*) ;;
		*) progs+=("$f") ;; esac
	done
	{
		for f in "${progs[@]}"; do
			readlink -f "$f"
			ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}' | xargs -r readlink -f
		done
	} | sort -u >"$IMG/files.list"
	while read -r f; do
		mkdir -p "$IMG/root$(dirname "$f")"; cp -a "$f" "$IMG/root$f"
	done <"$IMG/files.list"
	# per-request images of the CGI (nothing maps them between requests)
	{ echo /usr/bin/dash /usr/bin/openssl /usr/bin/head
	  ldd /usr/bin/openssl | awk '$2 == "=>" && $3 ~ /^\// {print $3}' | xargs -r readlink -f; } |
		tr '\n' ' ' >"$IMG/perreq.list"
	# PostgreSQL: a cluster with pgbench's tables (scale 2, ~30 MB)
	local pg=/usr/lib/postgresql/15/bin
	mkdir -p "$IMG/pgdata" "$W/pgsock"; chown postgres: "$IMG/pgdata" "$W/pgsock"
	runuser -u postgres -- "$pg/initdb" -D "$IMG/pgdata" -A trust --no-sync -U postgres >/dev/null
	cat >"$IMG/conf/postgresql.conf" <<CONF
listen_addresses = ''
unix_socket_directories = '/run/bench-pg'
max_connections = 20
shared_buffers = 16MB
synchronous_commit = off
checkpoint_timeout = 30min
max_wal_size = 1GB
log_destination = 'stderr'
jit = off
hba_file = '/mnt/scratch/pgdata/pg_hba.conf'
ident_file = '/mnt/scratch/pgdata/pg_ident.conf'
CONF
	runuser -u postgres -- "$pg/pg_ctl" -D "$IMG/pgdata" -w -o "-k $W/pgsock -c listen_addresses='' -p 5499" start >/dev/null
	runuser -u postgres -- pgbench -h "$W/pgsock" -p 5499 -U postgres -i -s 2 -q postgres >/dev/null 2>&1
	runuser -u postgres -- "$pg/pg_ctl" -D "$IMG/pgdata" -w stop >/dev/null
	# nginx: a static page, and the CGI
	head -c 4096 /usr/share/common-licenses/GPL-2 >"$IMG/www/index.html"
	cat >"$IMG/www/req.cgi" <<'CGI'
#!/bin/sh
echo "Content-Type: text/plain"
echo
openssl version | head -n 1
CGI
	chmod +x "$IMG/www/req.cgi"
	local which name
	for which in nginx cgi; do
		name=nginx.conf
		[ "$which" = cgi ] && name=nginx-cgi.conf
		cat >"$IMG/conf/$name" <<CONF
user root;
worker_processes 2;
pid /run/bench-$which/nginx.pid;
error_log stderr;
events { worker_connections 64; }
http {
	log_format bench '\$msec \$request_time \$status';
	access_log /run/bench-$which/access.log bench buffer=16k flush=1s;
	server {
		listen 127.0.0.1:8080;
		root /mnt/scratch/www;
		location = /cgi {
			include /etc/nginx/fastcgi_params;
			fastcgi_param SCRIPT_FILENAME /mnt/scratch/www/req.cgi;
			fastcgi_pass unix:/run/bench-cgi/fcgi.sock;
		}
	}
}
CONF
	done
	# wrk: paced requests (DELAY_MS before each), and its own percentiles
	cat >"$IMG/conf/report.lua" <<'LUA'
local d = tonumber(os.getenv("DELAY_MS") or "0")
function delay() return d end
function done(summary, latency, requests)
	local f = assert(io.open(os.getenv("WRK_OUT"), "w"))
	f:write(string.format("requests=%d\nduration_us=%d\nerrors=%d\n", summary.requests, summary.duration,
		summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.status + summary.errors.timeout))
	for _, p in ipairs({50, 99, 99.9}) do
		f:write(string.format("p%s_us=%d\n", tostring(p), latency:percentile(p)))
	end
	f:write(string.format("max_us=%d\n", latency.max))
	f:close()
end
LUA
	# the page-cache stream
	head -c 384M /dev/urandom >"$IMG/stream.dat"
	echo "$stamp" >"$IMG/.stamp"
}
stamp=$(sha256sum "$HERE"/{hog,sampler,cgsegres,eg-mlockall}.c "$HERE/pysvc.py" "$0" | sha256sum | cut -c1-16)
[ "$(cat "$IMG/.stamp" 2>/dev/null)" = "$stamp" ] || build_image
[ "$PREPARE" = 1 ] && { echo "run.sh: $IMG is ready"; exit 0; }

# the same kernel for every boot of this run, even if it is rebuilt meanwhile
cp "$KERNEL" "$W/bzImage.$$"
trap 'rm -f "$W/bzImage.$$"' EXIT
KREL=$(file -b "$KERNEL" | sed -n 's/.*version \([^ ]*\).*/\1/p')
[ -n "$TAG" ] || TAG=${KREL:-unknown}
OUT=${OUT:-$HERE/results/$TAG}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
{ echo "kernel=$KERNEL"; echo "kernel_release=$KREL"; echo "kernel_sha256=$(sha256sum "$KERNEL" | cut -c1-16)"; } >"$OUT/kernel.$$"
if [ -f "$OUT/kernel" ] && ! diff -q <(grep sha256 "$OUT/kernel") <(grep sha256 "$OUT/kernel.$$") >/dev/null; then
	echo "run.sh: $OUT holds runs of another kernel ($(cat "$OUT/kernel" | tr '\n' ' ')): use another --out or --tag" >&2
	rm -f "$OUT/kernel.$$"; exit 2
fi
mv "$OUT/kernel.$$" "$OUT/kernel"
echo "$(date -u +%FT%TZ) $CMDLINE" >>"$OUT/commands"

# qemu's block throttling on the services' disk: vm-run.sh has no option for
# extra qemu arguments, so a qemu-system-x86_64 first on PATH adds the disk
# (as bench/pressure/run.sh does)
SHIM=$W/shim
mkdir -p "$SHIM"
REAL_QEMU=$(PATH=${PATH//$SHIM:/} command -v qemu-system-x86_64)
cat >"$SHIM/qemu-system-x86_64" <<SH
#!/bin/sh
exec $REAL_QEMU "\$@" -drive "file=\$REAL_DISK,format=raw,if=virtio,cache=unsafe,throttling.bps-total=$BPS,throttling.iops-total=$IOPS"
SH
chmod +x "$SHIM/qemu-system-x86_64"
cp "$HERE/inside.sh" "$W/inside.sh"

# the host's load while the VM runs: the analysis gives each cell the mean
# load average over its time (the guest's clock is the host's, from its RTC)
( while :; do echo "$(date +%s) $(cut -d' ' -f1-3 /proc/loadavg)"; sleep 10; done ) >>"$OUT/hostload" &
loadp=$!
# || : because the loop is killed before the analysis too: a failing
# command in an EXIT trap under set -e turns a finished run's status to 1
trap 'rm -f "$W/bzImage.$$"; kill $loadp 2>/dev/null || :' EXIT

ncells=$(( $(echo $SERVICES | wc -w) * ($(echo $SHAPES | wc -w) * $(echo $MODES | wc -w) + BASELINE) * (REPS - REP_FIRST + 1) ))
for lru in $LRUS; do
	conf=$W/config-$lru.$$
	cat >"$conf" <<CONF
LRU=$lru
SERVICES="$SERVICES"
SHAPES="$SHAPES"
MODES="$MODES"
REPS=$REPS
REP_FIRST=$REP_FIRST
DURATION=$DURATION
WARM=$WARM
SETTLE=$SETTLE
ROOM_MODERATE=$ROOM_MODERATE
ROOM_SEVERE=$ROOM_SEVERE
ROOM_SLICE=$ROOM_SLICE
SLICE_HOG=$SLICE_HOG
SPIKE_AFTER=$SPIKE_AFTER
SPIKE_HOLD=$SPIKE_HOLD
BASELINE=$BASELINE
SAMPLE_MS=100
PG_RATE_RO=10
PG_RATE_TPCB=4
NGINX_DELAY_MS=100
CGI_DELAY_MS=500
PY_DELAY_MS=100
DAEMON=$DAEMON
PERREQ_CGI="$(cat "$IMG/perreq.list")"
CONF
	rm -f "$W/disk.img"
	truncate -s 1G "$W/disk.img"
	mkfs.ext4 -q -F -d "$IMG" "$W/disk.img"
	# a cell takes about 90 s on a quiet host; the VM stops at the timeout,
	# and the next run of this command resumes after the last cell done
	timeout=$((ncells * 400 + 900))
	echo "run.sh: $lru: $ncells cells at most ($SERVICES / $SHAPES / $MODES, reps $REP_FIRST-$REPS), timeout ${timeout}s"
	REAL_DISK=$W/disk.img PATH=$SHIM:$PATH "$SRC/tests/vm/vm-run.sh" --mode systemd \
		--kernel "$W/bzImage.$$" --mem "$MEM" --results "$OUT" --quiet --allow-oom-kill \
		--log "$OUT/console-$lru.log" --timeout "$timeout" -- bash "$W/inside.sh" "$conf" ||
		echo "run.sh: $lru: VM exit $?" >&2
	grep -a '^real:' "$OUT/console-$lru.log" | tr -d '\r' | tail -n 5 || true
	rm -f "$conf"
done
kill $loadp 2>/dev/null || true
[ "$ANALYZE" = 1 ] && /usr/bin/python3 "$HERE/analyze.py" "$OUT"
echo "run.sh: results in $OUT (command: $CMDLINE)"
