#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Boot a kernel in qemu on the host's own root file system and run a
# command inside; exit with the command's exit status.
#
# The host's / is shared read-only over virtio-9p and is the lower layer of
# an overlay with a tmpfs upper layer, so the VM runs the host's binaries
# and libraries and its writes vanish with it. What the host holds in the
# paths the tests own (an administrator's /etc/execguard.conf and
# /etc/execguard.d, /var/lib/execguard, podman's storage and its
# configuration, the execguard package in dpkg's database, a persistent
# journal) is hidden from the guest, which sees them as on a machine where
# they were never made (hide-host-state.sh says which, and how). A busybox
# initramfs builds that root. Then, in mode "init" (the default), it runs the command as
# root in a chroot of it, without systemd; in mode "systemd" it
# switch_roots into systemd as PID 1, which boots execguard-vm.target
# (basic.target plus units that --copy puts into its .wants directory)
# and runs the command from a oneshot unit (execguard-vm-run.service), then
# powers off.
#
# Results come back on the serial console (shown on stderr and kept in the
# log file) and, with --results, in a writable 9p share of a host directory,
# mounted at /results in the VM.
#
# Usage: tests/vm/vm-run.sh [options] [--] COMMAND [ARG...]
#   --kernel PATH     bzImage (default: $EXECGUARD_BZIMAGE)
#   --mem SIZE        guest memory (default 1G)
#   --smp N           guest CPUs (default 2)
#   --numa            two NUMA nodes, each with half of the memory and of
#                     the CPUs (the kernel needs CONFIG_NUMA: kernel/build.sh
#                     --wide)
#   --append ARGS     extra kernel command line (e.g. lru_gen.enabled=0)
#   --timeout SEC     kill the VM after SEC seconds (default 900)
#   --boot-wait SEC   when the guest's init has not started after SEC
#                     seconds (the emulated machine stalled while booting,
#                     before any test ran), boot again, once (default: a
#                     fifth of --timeout, at least 240). The same when qemu
#                     itself exits or crashes (e.g. SIGSEGV) before the
#                     guest's init has started; once init has started, a
#                     qemu crash fails the run (125)
#   --disk SIZE       attach an empty ext4 disk of SIZE (e.g. 512M), mounted
#                     at /mnt/scratch; the command starts in that directory
#   --results DIR     share host DIR writable as /results
#   --copy SRC:DST    copy host file SRC to DST in the VM's root (repeatable)
#   --mode MODE       init (default) or systemd
#   --accel ACCEL     auto (default: KVM if a probe boot works, else TCG),
#                     kvm or tcg; also $EXECGUARD_VM_ACCEL
#   --plugin SPEC     load a qemu TCG plugin (qemu's -plugin SPEC, e.g.
#                     bench/kinsn's kinsn.so,ARG=VALUE,...); TCG only
#   --log FILE        keep the serial console log in FILE
#   --allow-splat     do not fail when the kernel log shows a BUG, WARNING,
#                     KASAN, lockdep, RCU stall or hung task report
#                     (tests/vm/splat-patterns)
#   --allow-oom-kill  an OOM kill's report (and its Call Trace) is not a
#                     splat: for commands that count OOM kills themselves
#                     (memory.events); any other report still fails the run
#   --quiet           do not copy the console to stderr
#
# Exit status: the command's; 124 on timeout; 125 when the VM did not
# report one (crash, panic) or qemu crashed after the guest started; 126
# when the kernel log shows a splat; 77 (skip) when qemu is not installed.
#
# qemu and the other host programs this starts are not execguard's: they
# run without the MALLOC_PERTURB_ that meson test sets for every test.
# $EXECGUARD_VM_QEMU (for tests of this script only) replaces
# qemu-system-x86_64.

set -euo pipefail

# meson test sets a random MALLOC_PERTURB_ for every test; qemu (not our
# code) has crashed with SIGSEGV under it while the guest booted. Nothing
# of ours runs on the host here, and the guest does not inherit this
# environment.
unset MALLOC_PERTURB_

kernel=${EXECGUARD_BZIMAGE:-}
mem=1G
smp=2
append=
timeout=900
boot_wait=
disk=
results=
mode=init
accel=${EXECGUARD_VM_ACCEL:-auto}
log=
allow_splat=false
allow_oom_kill=false
quiet=false
numa=false
copies=()
plugin=

die() { echo "vm-run.sh: error: $*" >&2; exit 125; }
note() { echo "vm-run.sh: $*" >&2; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) kernel=$2; shift ;;
	--mem) mem=$2; shift ;;
	--smp) smp=$2; shift ;;
	--append) append="$append $2"; shift ;;
	--timeout) timeout=$2; shift ;;
	--boot-wait) boot_wait=$2; shift ;;
	--disk) disk=$2; shift ;;
	--results) results=$2; shift ;;
	--copy) copies+=("$2"); shift ;;
	--mode) mode=$2; shift ;;
	--accel) accel=$2; shift ;;
	--log) log=$2; shift ;;
	--plugin) plugin=$2; shift ;;
	--allow-splat) allow_splat=true ;;
	--allow-oom-kill) allow_oom_kill=true ;;
	--quiet) quiet=true ;;
	--numa) numa=true ;;
	-h|--help) sed -n '3,/^[^#]/{/^[^#]/d;s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
	shift
done

[ $# -gt 0 ] || die "no command given"
case $mode in init|systemd) ;; *) die "unknown mode $mode" ;; esac
[ -n "$kernel" ] || die "no kernel: use --kernel or EXECGUARD_BZIMAGE"
[ -f "$kernel" ] || die "kernel $kernel not found"

qemu=${EXECGUARD_VM_QEMU:-$(command -v qemu-system-x86_64 || true)}
if [ -z "$qemu" ]; then
	echo "vm-run.sh: qemu-system-x86_64 not installed (apt-get install qemu-system-x86)" >&2
	exit 77
fi
busybox=
for b in /bin/busybox /usr/bin/busybox; do
	# ldd fails on a static binary
	if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then
		busybox=$b
		break
	fi
done
[ -n "$busybox" ] || die "static busybox not found (apt-get install busybox-static)"

work=$(mktemp -d /tmp/execguard-vm.XXXXXX)
qpid=
cleanup() {
	# a child forked for "cmd &" and signalled before its exec runs this
	# inherited trap too (bash): only this script's own shell cleans up
	[ "$BASHPID" = "$$" ] || return 0
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -n "$log" ] || log=$work/console.log
: >"$log"

# --- the command, quoted for the guest's shell ------------------------------

cmd=$(printf '%q ' "$@")

# --- initramfs -------------------------------------------------------------

initrd=$work/initramfs
mkdir -p "$initrd"/{bin,dev,proc,sys,lower,rw,newroot,payload}
cp "$busybox" "$initrd/bin/busybox"
ln -s busybox "$initrd/bin/sh"
hide=$(dirname "${BASH_SOURCE[0]}")/hide-host-state.sh
[ -f "$hide" ] || die "$hide not found"
cp "$hide" "$initrd/hide-host-state.sh"

i=0
for c in "${copies[@]}"; do
	srcf=${c%%:*}
	dst=${c#*:}
	[ -f "$srcf" ] || die "--copy: $srcf not found"
	cp "$srcf" "$initrd/payload/$i"
	echo "$i $dst" >>"$initrd/payload/list"
	i=$((i + 1))
done

cat >"$initrd/payload/cmd" <<EOF
$cmd
EOF
echo "$mode" >"$initrd/payload/mode"

cat >"$initrd/init" <<'EOF'
#!/bin/sh
# execguard VM init (busybox): host root over 9p + tmpfs overlay
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
# The host waits for this line (--boot-wait).
echo "EXECGUARD-VM-INIT"

fail() {
	echo "vm-init: $*"
	echo "EXECGUARD-VM-EXIT=125"
	sync
	reboot -f
}

mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=262144 hostroot /lower ||
	fail "cannot mount the host root"
mount -t tmpfs -o mode=0755 tmpfs /rw
mkdir -p /rw/upper /rw/work
# The guest's own view of the paths the tests own: whiteouts in the upper
# layer for what the host has there, before the overlay is mounted.
. /hide-host-state.sh
hidden=$(hide_host_state /lower /rw/upper) || fail "cannot hide the host's state: $hidden"
[ -z "$hidden" ] || echo "vm-init: the host's, hidden from the guest:" $hidden
mount -t overlay -o lowerdir=/lower,upperdir=/rw/upper,workdir=/rw/work \
	overlay /newroot || fail "cannot mount the overlay"

if [ -f /payload/list ]; then
	while read -r n dst; do
		mkdir -p "/newroot$(dirname "$dst")"
		cp "/payload/$n" "/newroot$dst"
	done </payload/list
fi

for d in /tmp /run; do
	mount -t tmpfs -o mode=1777 tmpfs /newroot$d
done
chmod 0755 /newroot/run
if grep -q results /sys/bus/virtio/drivers/9pnet_virtio/*/mount_tag 2>/dev/null; then
	mkdir -p /newroot/results
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 results /newroot/results
fi
if [ -b /dev/vda ]; then
	mkdir -p /newroot/mnt/scratch
	mount -t ext4 /dev/vda /newroot/mnt/scratch || fail "cannot mount /dev/vda"
fi
cp /payload/cmd /newroot/run/execguard-vm-cmd

mode=$(cat /payload/mode)
if [ "$mode" = systemd ]; then
	# A small target of our own: basic.target and the command's unit,
	# not every unit the host has enabled
	mkdir -p /newroot/etc/systemd/system/execguard-vm.target.wants
	cat >/newroot/etc/systemd/system/execguard-vm.target <<'UNIT'
[Unit]
Description=execguard VM test
Requires=basic.target
After=basic.target
AllowIsolate=yes
UNIT
	cat >/newroot/etc/systemd/system/execguard-vm-run.service <<'UNIT'
[Unit]
Description=execguard VM test command
After=basic.target

[Service]
Type=oneshot
WorkingDirectory=-/mnt/scratch
ExecStart=/bin/bash -c '/bin/bash /run/execguard-vm-cmd; echo "EXECGUARD-VM-EXIT=$$?"'
StandardOutput=tty
StandardError=tty
TTYPath=/dev/ttyS0
ExecStopPost=/bin/systemctl --no-block poweroff
UNIT
	ln -sf ../execguard-vm-run.service \
		/newroot/etc/systemd/system/execguard-vm.target.wants/
	mount --move /dev /newroot/dev
	mount --move /proc /newroot/proc
	mount --move /sys /newroot/sys
	exec switch_root /newroot /lib/systemd/systemd \
		--unit=execguard-vm.target --log-target=console
fi

mount --move /dev /newroot/dev
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount -t cgroup2 -o nsdelegate cgroup2 /newroot/sys/fs/cgroup
mount -t devpts devpts /newroot/dev/pts 2>/dev/null
hostname execguard-vm
cd /newroot/mnt/scratch 2>/dev/null || cd /newroot
chroot /newroot /bin/bash -c \
	'cd /mnt/scratch 2>/dev/null || cd /; export HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin; . /run/execguard-vm-cmd'
rc=$?
sync
echo "EXECGUARD-VM-EXIT=$rc"
reboot -f
EOF
chmod +x "$initrd/init"
(cd "$initrd" && find . | cpio -o -H newc --quiet | gzip -1) >"$work/initramfs.gz"

# --- scratch disk ----------------------------------------------------------

drives=()
if [ -n "$disk" ]; then
	command -v mkfs.ext4 >/dev/null || die "mkfs.ext4 not found (apt-get install e2fsprogs)"
	truncate -s "$disk" "$work/scratch.img"
	mkfs.ext4 -q -F -E lazy_itable_init=0,lazy_journal_init=0 "$work/scratch.img" >&2
	drives=(-drive "file=$work/scratch.img,format=raw,if=virtio,cache=unsafe")
fi

shares=(-virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap")
if [ -n "$results" ]; then
	mkdir -p "$results"
	shares+=(-virtfs "local,path=$(cd "$results" && pwd),mount_tag=results,security_model=none,multidevs=remap")
fi

# --- accelerator -----------------------------------------------------------

# KVM is there on some machines but hangs (nested virtualisation): probe
# with a short boot of this kernel, and remember the answer per host kernel
# and qemu version.
kvm_works() {
	[ -w /dev/kvm ] || return 1
	local cache
	cache=/var/tmp/execguard-vm-kvm.$(uname -r)-$("$qemu" --version | head -n1 | tr -dc '0-9.')
	if [ -f "$cache" ]; then
		[ "$(cat "$cache")" = yes ]
		return
	fi
	local probe=$work/probe answer=no
	mkdir -p "$probe/bin"
	cp "$busybox" "$probe/bin/busybox"
	printf '#!/bin/busybox sh\n/bin/busybox echo EXECGUARD-KVM-OK\n/bin/busybox reboot -f\n' >"$probe/init"
	chmod +x "$probe/init"
	(cd "$probe" && find . | cpio -o -H newc --quiet) >"$work/probe.cpio"
	if timeout -k 5 30 "$qemu" -accel kvm -cpu host -m 256M -smp 1 \
		-kernel "$kernel" -initrd "$work/probe.cpio" \
		-append "console=ttyS0 panic=-1" -display none -monitor none \
		-serial stdio -no-reboot </dev/null 2>/dev/null | grep -q EXECGUARD-KVM-OK; then
		answer=yes
	fi
	echo "$answer" >"$cache" 2>/dev/null || true
	[ "$answer" = yes ]
}

case $accel in
auto)
	if kvm_works; then accel=kvm; else accel=tcg; fi ;;
kvm|tcg) ;;
*) die "unknown accelerator $accel" ;;
esac
if [ "$accel" = kvm ]; then
	accel_args=(-accel kvm -cpu host)
else
	accel_args=(-accel "tcg,thread=multi" -cpu max)
fi
if [ -n "$plugin" ]; then
	[ "$accel" = tcg ] || die "--plugin needs TCG (--accel tcg), not $accel"
	accel_args+=(-plugin "$plugin")
fi

# --- run -------------------------------------------------------------------

[ -n "$boot_wait" ] || boot_wait=$((timeout / 5 > 240 ? timeout / 5 : 240))
# A TCG guest sometimes stalls for good while it boots (a CPU's timer
# interrupt never comes: "rcu_sched kthread timer wakeup didn't happen"),
# with the host busy; and qemu itself has crashed (SIGSEGV) while the
# guest booted. No test has run before the guest's init has started, so
# booting again is safe, once; what the first boot logged is kept and
# checked for kernel reports below, except for an RCU stall. Once init has
# started, a command runs: a qemu crash then fails the run.
qexit() { # describe qemu's exit status $1
	if [ "$1" -gt 128 ] && [ "$1" != 255 ]; then
		echo "qemu killed by signal $(($1 - 128)) (SIG$(kill -l "$(($1 - 128))" 2>/dev/null || echo '?'))"
	else
		echo "qemu exited with status $1"
	fi
}
# Two nodes: memory and CPUs split in halves, a socket each (in one socket
# the two nodes would share a last-level cache, which the guest kernel
# reports with a WARNING in topology_sane())
numa_args=()
smp_arg=$smp
if $numa; then
	smp_arg="$smp,sockets=2,cores=$(( smp / 2 )),threads=1"
	half=$(( $(numfmt --from=iec "$mem") / 2 ))
	numa_args=(-object "memory-backend-ram,id=m0,size=$half"
		-numa "node,nodeid=0,cpus=0-$(( smp / 2 - 1 )),memdev=m0"
		-object "memory-backend-ram,id=m1,size=$half"
		-numa "node,nodeid=1,cpus=$(( smp / 2 ))-$(( smp - 1 )),memdev=m1")
fi
for attempt in 1 2; do
	: >"$log"
	note "booting $kernel ($accel, $smp CPUs, $mem, mode $mode)"
	start=$(date +%s)
	set +e
	timeout -k 10 "$timeout" "$qemu" "${accel_args[@]}" -smp "$smp_arg" -m "$mem" \
		-kernel "$kernel" -initrd "$work/initramfs.gz" \
		-append "console=ttyS0 loglevel=5 panic=-1 oops=panic rw $append" \
		-display none -monitor none -serial "file:$log" -no-reboot \
		-device virtio-rng-pci "${numa_args[@]}" \
		"${shares[@]}" "${drives[@]}" </dev/null >&2 &
	qpid=$!
	if ! $quiet; then
		tail -n +1 -f --pid="$qpid" "$log" >&2 &
	fi
	booted=false
	while kill -0 "$qpid" 2>/dev/null; do
		grep -q EXECGUARD-VM-INIT "$log" && { booted=true; break; }
		[ $(($(date +%s) - start)) -ge "$boot_wait" ] && break
		sleep 1
	done
	retry=
	if ! $booted && kill -0 "$qpid" 2>/dev/null; then
		if [ "$attempt" = 1 ]; then
			kill "$qpid" 2>/dev/null
			wait "$qpid" 2>/dev/null
			retry="no init $boot_wait s after boot"
		fi
	fi
	if [ -z "$retry" ]; then
		wait "$qpid"
		qrc=$?
		# A short run can start init and end between two looks.
		grep -q EXECGUARD-VM-INIT "$log" && booted=true
		if ! $booted && [ "$attempt" = 1 ] && [ "$qrc" != 124 ] &&
			[ $(($(date +%s) - start)) -lt "$timeout" ]; then
			retry="$(qexit "$qrc") $(($(date +%s) - start)) s into the boot, before the guest's init started"
		fi
	fi
	qpid=
	wait 2>/dev/null
	set -e
	if [ -n "$retry" ]; then
		tr -d '\r' <"$log" >"$work/console-boot1.txt"
		note "$retry (last kernel line: $(grep -E '^\[' "$work/console-boot1.txt" | tail -n 1 | cut -c1-120)); booting again, once"
		continue
	fi
	break
done
note "VM ran for $(( $(date +%s) - start )) s"

# Kernel reports (tests/vm/splat-patterns), shown whatever else happened.
# Into files first: with pipefail, "tr | grep -q" can lose a match to
# tr's SIGPIPE once the log is longer than a pipe buffer.
patterns=$(dirname "${BASH_SOURCE[0]}")/splat-patterns
[ -f "$patterns" ] || die "$patterns not found"
grep -v -e '^#' -e '^$' "$patterns" >"$work/splat.re"
tr -d '\r' <"$log" >"$work/console.txt"
reports=$work/console.txt
if $allow_oom_kill; then
	awk -f "$(dirname "${BASH_SOURCE[0]}")/oom-reports.awk" "$work/console.txt" >"$work/console-no-oom.txt"
	reports=$work/console-no-oom.txt
	grep -q 'invoked oom-killer:' "$work/console.txt" &&
		note "OOM kill report(s) in the kernel log, not counted as a splat (--allow-oom-kill)"
fi
splat=false
if grep -Eq -f "$work/splat.re" "$reports"; then
	splat=true
	note "kernel log shows a splat:"
	grep -E -m10 -f "$work/splat.re" "$reports" >&2
fi
if [ -f "$work/console-boot1.txt" ] &&
	grep -E -f "$work/splat.re" "$work/console-boot1.txt" | grep -vEq 'rcu|RCU|Call Trace:'; then
	splat=true
	note "the first boot's kernel log (booted again) shows a splat:"
	grep -E -m10 -f "$work/splat.re" "$work/console-boot1.txt" | grep -vE 'rcu|RCU|Call Trace:' >&2
fi

# timeout -k exits 137 when it had to kill qemu; a SIGKILL from elsewhere
# (the OOM killer) before then is a crash
if [ "$qrc" = 124 ] || { [ "$qrc" = 137 ] && [ $(($(date +%s) - start)) -ge "$timeout" ]; }; then
	note "timeout after $timeout s"
	exit 124
fi

rc=$(sed -n 's/^EXECGUARD-VM-EXIT=\([0-9]*\)$/\1/p' "$work/console.txt" | tail -n1)
if [ "$qrc" -ge 128 ]; then
	if $booted; then
		note "$(qexit "$qrc") after the guest's init started${rc:+ (the command reported exit status $rc)}: not booting again, failing the run"
	else
		note "$(qexit "$qrc") before the guest's init started, on boot $attempt of 2"
	fi
	exit 125
fi
if [ -z "$rc" ]; then
	if $booted; then
		note "the VM did not report an exit status ($(qexit "$qrc"))"
	else
		note "the guest's init did not start ($(qexit "$qrc"))"
	fi
	exit 125
fi

if $splat && ! $allow_splat && [ "$rc" = 0 ]; then
	rc=126
fi
exit "$rc"
