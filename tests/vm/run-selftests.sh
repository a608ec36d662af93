#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Run the memory.exec_protect selftests (tools/testing/selftests/cgroup/
# test_exec_protect from kernel/patches) in a VM booted on the patched
# kernel, under one LRU implementation.
#
# Usage: tests/vm/run-selftests.sh [--debug | --wide] classic|mglru [vm-run.sh options]
#
# The kernel is $EXECGUARD_BZIMAGE, or what kernel/build.sh prints (fast
# when it is already built; with --debug, the KASAN+lockdep kernel of
# kernel/build.sh --debug, and a longer timeout: TCG runs it several times
# slower). The selftest binary is $EXECGUARD_SELFTESTS,
# or the "selftests" directory next to the kernel. The files the tests map
# are on an ext4 scratch disk: tmpfs and shmem are not protected.
# $EXECGUARD_SELFTEST_NAMES, when set, runs only the tests it names
# (space-separated, e.g. "test_exec_protect_bound test_exec_first_use").

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd)

build_args=()
vm_args=()
timeout=900
if [ "${1:-}" = --debug ]; then
	build_args=(--debug)
	timeout=3000
	# Under KASAN, TCG is slow enough that ACPI's AML interpreter times
	# out in _PRT and the virtio devices get no interrupt (the kernel has
	# no PCI MSI); take PCI routing from the PIR table instead. And do not
	# report RCU stalls that are only the emulation's slowness.
	vm_args=(--append "acpi=noirq rcupdate.rcu_cpu_stall_timeout=300")
	shift
fi

if [ "${1:-}" = --wide ]; then
	# kernel/build.sh --wide: THP, NUMA, all of DAMON
	build_args=(--wide)
	shift
fi

lru=${1:-}
case $lru in
classic) lru_gen=n ;;
mglru) lru_gen=y ;;
*) echo "usage: $0 [--debug | --wide] classic|mglru [vm-run.sh options]" >&2; exit 2 ;;
esac
shift

command -v qemu-system-x86_64 >/dev/null || {
	echo "SKIP: qemu-system-x86_64 not installed" >&2
	exit 77
}

bzimage=${EXECGUARD_BZIMAGE:-}
if [ -z "$bzimage" ]; then
	bzimage=$("$repo/kernel/build.sh" "${build_args[@]}" | tail -n1)
fi
selftests=${EXECGUARD_SELFTESTS:-$(dirname "$bzimage")/selftests}
[ -x "$selftests/test_exec_protect" ] || {
	echo "error: $selftests/test_exec_protect not found" >&2
	exit 1
}

# shellcheck disable=SC2016
script='
set -e
echo '"$lru_gen"' > /sys/kernel/mm/lru_gen/enabled
echo "lru_gen/enabled: $(cat /sys/kernel/mm/lru_gen/enabled)"
start=$(date +%s)
rc=0
'"$selftests"'/test_exec_protect '"${EXECGUARD_SELFTEST_NAMES:-}"' || rc=$?
echo "selftests took $(( $(date +%s) - start )) s"
exit $rc
'

# The OOM-fallback tests count OOM kills themselves (memory.events) and
# fail on any they do not expect: the kernel's report of one, with its
# Call Trace, is not a splat here. Every other report still is.
exec "$here/vm-run.sh" --kernel "$bzimage" --mem 1G --disk 384M --allow-oom-kill \
	--timeout "$timeout" "${vm_args[@]}" "$@" -- bash -c "$script"
