#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# vm-run.sh must fail a run whose console shows a kernel report, or every
# VM test that relies on it (KASAN, lockdep, RCU stalls) cannot fail.
# First the patterns (tests/vm/splat-patterns) against report lines of
# each kind, as the kernel prints them, and against lines of a clean
# KASAN+lockdep boot; that oom-reports.awk (--allow-oom-kill) drops an OOM
# kill's report and nothing after it; then a VM whose command writes a report to
# /dev/kmsg must exit 126, and one that does not must exit 0; and a boot
# that has not reached init within --boot-wait is tried once more, the
# command's own status coming back.
#
# Usage: tests/vm/test-splat.sh [--debug]
#   --debug  boot the KASAN+lockdep kernel (kernel/build.sh --debug), with
#            the command line tests/vm/run-selftests.sh --debug uses
# The kernel is $EXECGUARD_BZIMAGE, or what kernel/build.sh prints.

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd)

build_args=()
vm_args=(--timeout 300)
if [ "${1:-}" = --debug ]; then
	build_args=(--debug)
	vm_args=(--timeout 1200 --append "acpi=noirq rcupdate.rcu_cpu_stall_timeout=300")
fi

re=$(mktemp)
work_err=$(mktemp)
trap 'rm -f "$re" "$work_err"' EXIT
grep -v -e '^#' -e '^$' "$here/splat-patterns" >"$re"
failed=0

while IFS= read -r line; do
	[ -n "$line" ] || continue
	if ! grep -Eq -f "$re" <<<"$line"; then
		echo "FAIL: not detected: $line"
		failed=$((failed + 1))
	fi
done <<'REPORTS'
[   12.345678] BUG: KASAN: slab-use-after-free in folio_referenced_one+0x1a2/0x3c0
[   12.345678] BUG: sleeping function called from invalid context at mm/vmscan.c:1234
[   12.345678] BUG: Bad page state in process kswapd0  pfn:1a2b3
[   12.345678] watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [test_exec_prote:88]
[   12.345678] BUG: MAX_LOCKDEP_CHAINS too low!
[   12.345678] WARNING: CPU: 1 PID: 88 at mm/vmscan.c:6432 do_try_to_free_pages+0x2f/0x4c0
[   12.345678] WARNING: possible circular locking dependency detected
[   12.345678] WARNING: possible recursive locking detected
[   12.345678] WARNING: inconsistent lock state
[   12.345678] WARNING: suspicious RCU usage
[   12.345678] kernel BUG at mm/rmap.c:1234!
[   12.345678] Oops: general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN
[   12.345678] UBSAN: shift-out-of-bounds in mm/vmscan.c:42:17
[   12.345678] rcu: INFO: rcu_preempt self-detected stall on CPU
[   12.345678] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
[   12.345678] rcu: rcu_preempt kthread starved for 10502 jiffies! g1234 f0x0 RCU_GP_WAIT_FQS(5) ->state=0x0 ->cpu=1
[   12.345678] INFO: task kswapd0:42 blocked for more than 122 seconds.
[   12.345678] Call Trace:
[   12.345678] Kernel panic - not syncing: Fatal exception
REPORTS

while IFS= read -r line; do
	[ -n "$line" ] || continue
	if grep -Eq -f "$re" <<<"$line"; then
		echo "FAIL: a clean line taken for a report: $line"
		failed=$((failed + 1))
	fi
done <<'CLEAN'
[    0.000000] Lock dependency validator: Copyright (c) 2006 Red Hat, Inc., Ingo Molnar
[    0.000000] ... MAX_LOCKDEP_SUBCLASSES:  8
[    0.000000]  memory used by lock dependency info: 6429 kB
[    0.000000] kasan: KernelAddressSanitizer initialized (generic)
[    0.000000] rcu: Preemptible hierarchical RCU implementation.
[    0.000000] rcu: 	RCU lockdep checking is enabled.
[   13.207243] hrtimer: interrupt took 12640975 ns
[  355.720187] clocksource: Long readout interval, skipping watchdog check: cs_nsec: 1208018996 wd_nsec: 1208019030
# oom fallback: exit 0, oom_kill 0
ok 6 test_exec_protect_oom_fallback
CLEAN

# --allow-oom-kill (oom-reports.awk): an OOM kill's report goes, Call
# Trace and all; a report after it, or after one cut short, stays.
oom_log='[   20.371683] test_exec_prote invoked oom-killer: gfp_mask=0x440dc0(GFP_KERNEL_ACCOUNT|__GFP_COMP|__GFP_ZERO), order=0, oom_score_adj=0
[   20.377364] CPU: 0 UID: 0 PID: 129 Comm: test_exec_prote Not tainted 6.12.117+ #3
[   20.377871] Call Trace:
[   20.379713] RIP: 0033:0x559891d579a0
[   20.577310] Memory cgroup out of memory: Killed process 127 (test_exec_prote) total-vm:10684kB, anon-rss:164kB, file-rss:6048kB
# protected, 20 mapper(s): 1097 ms, 1 failed'
if awk -f "$here/oom-reports.awk" <<<"$oom_log" | grep -Eq -f "$re"; then
	echo "FAIL: an OOM kill report left a match after oom-reports.awk"
	failed=$((failed + 1))
fi
if ! awk -f "$here/oom-reports.awk" <<<"$oom_log" | grep -q '^# protected, 20 mapper'; then
	echo "FAIL: oom-reports.awk dropped a line after the report"
	failed=$((failed + 1))
fi
if ! printf '%s\n%s\n' "$oom_log" '[   21.000000] BUG: KASAN: slab-use-after-free in x+0x1/0x2' |
	awk -f "$here/oom-reports.awk" | grep -Eq -f "$re"; then
	echo "FAIL: a report after an OOM kill report not detected with oom-reports.awk"
	failed=$((failed + 1))
fi
if ! { echo '[   20.0] x invoked oom-killer: gfp_mask=0x0'; for _ in $(seq 400); do echo '[   20.1] line'; done
	echo '[   21.0] BUG: soft lockup - CPU#1 stuck for 26s!'; } |
	awk -f "$here/oom-reports.awk" | grep -Eq -f "$re"; then
	echo "FAIL: an OOM kill report cut short hides what follows"
	failed=$((failed + 1))
fi

[ "$failed" = 0 ] && echo "ok: the patterns tell reports from clean lines"

command -v qemu-system-x86_64 >/dev/null || {
	echo "SKIP: qemu-system-x86_64 not installed, VM part not run" >&2
	[ "$failed" = 0 ] && exit 77
	exit 1
}
bzimage=${EXECGUARD_BZIMAGE:-}
[ -n "$bzimage" ] || bzimage=$("$repo/kernel/build.sh" "${build_args[@]}" | tail -n1)

rc=0
"$here/vm-run.sh" --kernel "$bzimage" --quiet "${vm_args[@]}" -- sh -c \
	'echo "<3>BUG: KASAN: slab-out-of-bounds in execguard_splat_test+0x0/0x1" >/dev/kmsg' || rc=$?
if [ "$rc" = 126 ]; then
	echo "ok: a run with a report on the console exits 126"
else
	echo "FAIL: a run with a report on the console exited $rc, not 126"
	failed=$((failed + 1))
fi

rc=0
"$here/vm-run.sh" --kernel "$bzimage" --quiet "${vm_args[@]}" -- true || rc=$?
if [ "$rc" = 0 ]; then
	echo "ok: a clean run exits 0"
else
	echo "FAIL: a clean run exited $rc"
	failed=$((failed + 1))
fi

# A boot that has not reached init in --boot-wait seconds is tried once
# more; the command then runs and its status comes back.
rc=0
"$here/vm-run.sh" --kernel "$bzimage" --quiet --boot-wait 1 "${vm_args[@]}" -- sh -c 'exit 3' \
	2>"$work_err" || rc=$?
if [ "$rc" = 3 ] && grep -q "booting again, once" "$work_err"; then
	echo "ok: a boot without init in time is tried again and the command's status comes back"
else
	echo "FAIL: boot-wait retry: exit $rc, want 3: $(tail -n 3 "$work_err")"
	failed=$((failed + 1))
fi

exit $((failed > 0))
