#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# vm-run.sh boots again, once, when qemu itself exits or crashes before
# the guest's init has started (qemu has died of SIGSEGV 4 s into a boot),
# and fails the run when it crashes after; it runs qemu without the
# MALLOC_PERTURB_ that meson test sets.
#
# Without options, qemu is replaced ($EXECGUARD_VM_QEMU) by a stand-in
# that follows a plan, one step per boot: no kernel, no qemu needed, a few
# seconds. With --boot, the real qemu boots the real kernel behind a
# wrapper that kills it with SIGSEGV at once (surely before the guest's
# init; then lets the second boot through), or once init has started.
#
# Usage: tests/vm/test-vm-run.sh [--boot]
# With --boot the kernel is $EXECGUARD_BZIMAGE, or what kernel/build.sh
# prints.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd)
boot=false
[ "${1:-}" = --boot ] && boot=true

busybox=
for b in /bin/busybox /usr/bin/busybox; do
	if [ -x "$b" ] && ! ldd "$b" >/dev/null 2>&1; then busybox=$b; break; fi
done
[ -n "$busybox" ] || { echo "SKIP: static busybox not found (apt-get install busybox-static)"; exit 77; }

T=$(mktemp -d /tmp/execguard-test-vm-run.XXXXXX)
trap 'rm -rf "$T"' EXIT
failed=0
ok() { echo "ok: $*"; }
fail() { echo "FAIL: $*"; failed=$((failed + 1)); }

# --- the stand-in --------------------------------------------------------
# One step of $FAKE_QEMU_PLAN (space separated) per boot, as counted by
# vm-run.sh's "booting" lines in $FAKE_QEMU_ERR (a boot killed before its
# stand-in has even started counts); it writes the guest's console lines
# into the -serial file and records in $FAKE_QEMU_STATE/env whether it saw
# MALLOC_PERTURB_.
#   segv         die of SIGSEGV before init
#   exit1        exit 1 before init
#   stall        hang before init
#   ok:N         init starts, the command exits N, qemu exits 0
#   init-segv    init starts, then SIGSEGV
#   report-segv  init starts, the command reports 0, then SIGSEGV
cat >"$T/fake-qemu" <<'EOF'
#!/bin/bash
serial=
while [ $# -gt 0 ]; do
	[ "$1" = -serial ] && serial=${2#file:}
	shift
done
n=$(grep -c '^vm-run.sh: booting ' "$FAKE_QEMU_ERR")
echo "boot $n: MALLOC_PERTURB_=${MALLOC_PERTURB_-unset}" >>"$FAKE_QEMU_STATE/env"
read -r -a plan <<<"$FAKE_QEMU_PLAN"
step=${plan[n - 1]:-ok:0}
echo "[    0.000000] Linux version 6.12.0-fake (stand-in boot $n)" >>"$serial"
case $step in
segv) sleep 0.2; kill -SEGV $$ ;;
exit1) echo "qemu-system-x86_64: stand-in error" >&2; exit 1 ;;
stall) exec sleep 120 ;;
ok:*) printf 'EXECGUARD-VM-INIT\r\nEXECGUARD-VM-EXIT=%s\r\n' "${step#ok:}" >>"$serial"; exit 0 ;;
init-segv) echo EXECGUARD-VM-INIT >>"$serial"; sleep 1.5; kill -SEGV $$ ;;
report-segv) printf 'EXECGUARD-VM-INIT\nEXECGUARD-VM-EXIT=0\n' >>"$serial"; sleep 0.2; kill -SEGV $$ ;;
esac
exit 99
EOF
chmod +x "$T/fake-qemu"
: >"$T/bzImage"

# fake PLAN WANT-RC WANT-BOOTS [GREP...] -- VM-RUN-ARGS...: run vm-run.sh
# (with a MALLOC_PERTURB_ as meson test sets it) on the stand-in
fake() {
	local plan=$1 want=$2 boots=$3 rc=0 g
	shift 3
	local greps=()
	while [ "$1" != -- ]; do greps+=("$1"); shift; done
	shift
	rm -rf "$T/state"; mkdir "$T/state"
	MALLOC_PERTURB_=219 EXECGUARD_VM_QEMU=$T/fake-qemu FAKE_QEMU_PLAN=$plan FAKE_QEMU_STATE=$T/state \
		FAKE_QEMU_ERR=$T/err \
		"$here/vm-run.sh" --kernel "$T/bzImage" --accel tcg --quiet "$@" 2>"$T/err" || rc=$?
	local got
	got=$(grep -c '^vm-run.sh: booting ' "$T/err")
	local what="plan \"$plan\": exit $rc, $got boot(s)"
	if [ "$rc" != "$want" ] || [ "$got" != "$boots" ]; then
		fail "$what; want exit $want, $boots boot(s): $(tail -n 4 "$T/err")"
		return
	fi
	for g in "${greps[@]}"; do
		if ! grep -q -- "$g" "$T/err"; then
			fail "$what; vm-run.sh did not say \"$g\": $(tail -n 4 "$T/err")"
			return
		fi
	done
	if ! [ -s "$T/state/env" ] || grep -v 'MALLOC_PERTURB_=unset$' "$T/state/env" | grep -q .; then
		fail "$what; qemu ran with MALLOC_PERTURB_ (or never): $(cat "$T/state/env" 2>/dev/null)"
		return
	fi
	ok "$what, as wanted; qemu ran without MALLOC_PERTURB_${greps:+; said \"${greps[*]}\"}"
	grep -E 'booting again|not booting again|before the guest|timeout' "$T/err" | sed 's/^/    /' || true
}

if ! $boot; then
	# The crash of the issue: SIGSEGV before init, then a good boot whose
	# command's status comes back.
	fake "segv ok:3" 3 2 "killed by signal 11 (SIGSEGV)" "before the guest's init started" "booting again, once" \
		-- -- sh -c 'exit 3'
	# Any qemu exit before init is retried too.
	fake "exit1 ok:0" 0 2 "qemu exited with status 1" "booting again, once" -- -- true
	# Only once: a second crash fails the run.
	fake "segv segv ok:0" 125 2 "booting again, once" "on boot 2 of 2" -- -- true
	# A crash once init has started is a failure, not retried, whether or
	# not the command's status came back.
	fake "init-segv ok:0" 125 1 "after the guest's init started: not booting again" -- -- true
	fake "report-segv ok:0" 125 1 "command reported exit status 0" -- -- true
	# The stall retry (--boot-wait) is the same code path.
	fake "stall ok:4" 4 2 "no init 1 s after boot" "booting again, once" -- --boot-wait 1 -- true
	# A stall on the second boot runs into the timeout, no third boot.
	fake "stall stall ok:0" 124 2 "timeout after 4 s" -- --boot-wait 1 --timeout 4 -- true
	# A run that starts init and ends between two looks is not a crash.
	fake "ok:0" 0 1 -- -- true
	exit $((failed > 0))
fi

# --- the real qemu and kernel ----------------------------------------------
real=$(command -v qemu-system-x86_64 || true)
[ -n "$real" ] || { echo "SKIP: qemu-system-x86_64 not installed"; exit 77; }
bzimage=${EXECGUARD_BZIMAGE:-}
[ -n "$bzimage" ] || bzimage=$("$repo/kernel/build.sh" | tail -n1)

# The wrapper: on its first run ($CRASH_AT: "start", at once, so surely
# before the guest's init, whatever the machine's speed; "init", once init
# has started) it kills qemu with SIGSEGV and dies of it too; later runs
# are plain qemu.
cat >"$T/crash-qemu" <<'EOF'
#!/bin/bash
serial=
for a in "$@"; do case $a in file:*) serial=${a#file:} ;; esac; done
n=$(( $(cat "$CRASH_STATE/boots" 2>/dev/null || echo 0) + 1 ))
echo "$n" >"$CRASH_STATE/boots"
echo "boot $n: MALLOC_PERTURB_=${MALLOC_PERTURB_-unset}" >>"$CRASH_STATE/env"
[ "$n" = 1 ] || exec "$REAL_QEMU" "$@"
"$REAL_QEMU" "$@" &
q=$!
trap 'kill $q 2>/dev/null' EXIT
if [ "$CRASH_AT" = start ]; then
	# Stopped at once: the guest cannot reach init before the SIGSEGV.
	kill -STOP $q
else
	for _ in $(seq 1200); do
		grep -q EXECGUARD-VM-INIT "$serial" 2>/dev/null && break
		kill -0 $q 2>/dev/null || break
		sleep 0.1
	done
fi
if grep -q EXECGUARD-VM-INIT "$serial"; then
	echo "init started before the SIGSEGV" >>"$CRASH_STATE/when"
else
	echo "before init" >>"$CRASH_STATE/when"
fi
kill -SEGV $q
kill -CONT $q 2>/dev/null
wait $q
trap - EXIT
kill -SEGV $$
EOF
chmod +x "$T/crash-qemu"

# real CRASH-AT WANT-RC WANT-BOOTS GREP -- COMMAND...
# (TCG always: where /dev/kvm exists, the KVM probe boot would be the
# wrapper's first "boot")
real() {
	local at=$1 want=$2 boots=$3 g=$4 rc=0
	shift 5
	rm -rf "$T/state"; mkdir "$T/state"
	MALLOC_PERTURB_=219 EXECGUARD_VM_QEMU=$T/crash-qemu REAL_QEMU=$real CRASH_AT=$at CRASH_STATE=$T/state \
		"$here/vm-run.sh" --kernel "$bzimage" --accel tcg --quiet --timeout 300 -- "$@" 2>"$T/err" || rc=$?
	local got when
	got=$(cat "$T/state/boots" 2>/dev/null || echo 0)
	when=$(cat "$T/state/when" 2>/dev/null || echo "no SIGSEGV sent")
	local what="SIGSEGV at $at ($when): exit $rc, $got boot(s)"
	if [ "$rc" != "$want" ] || [ "$got" != "$boots" ] || ! grep -q -- "$g" "$T/err"; then
		fail "$what; want exit $want, $boots boot(s), \"$g\": $(tail -n 4 "$T/err")"
	elif grep -v 'MALLOC_PERTURB_=unset$' "$T/state/env" | grep -q .; then
		fail "$what; qemu ran with MALLOC_PERTURB_: $(cat "$T/state/env")"
	else
		ok "$what, as wanted; qemu ran without MALLOC_PERTURB_"
	fi
	grep -E 'booting again|not booting again|before the guest|ran for' "$T/err" | sed 's/^/    /' || true
}

real start 3 2 "killed by signal 11 (SIGSEGV)" -- sh -c 'exit 3'
real init 125 1 "after the guest's init started: not booting again" -- sleep 60
exit $((failed > 0))
