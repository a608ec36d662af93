#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# The kernel's own cgroup selftests (tools/testing/selftests/cgroup:
# test_memcontrol, test_core, test_kmem, test_freezer) on the kernel
# without the series and on the patched kernel, each under the classic LRU
# and under MGLRU, in a VM (tests/vm/vm-run.sh): a table of every test
# case, ok / fail / skip per kernel and LRU. The series must not break
# what passes without it (issue 34).
#
# Usage: tests/vm/run-cgroup-selftests.sh [options]
#   --bzimage PATH      the patched kernel (default: $EXECGUARD_BZIMAGE,
#                       else what kernel/build.sh prints)
#   --unpatched-bzimage PATH
#                       the kernel without the series (default: what
#                       kernel/build.sh --unpatched prints; it builds it in
#                       its own directory when needed, which takes a while)
#   --kernels WHICH     both (default), patched or unpatched: run only one
#                       (then nothing is compared)
#   --lru WHICH         both (default), classic or mglru
#   --tests "NAME..."   the selftest programs (default: test_memcontrol
#                       test_core test_kmem test_freezer)
#   --runs N            run each program N times in each boot (default 1)
#   --confirm N         run a program N more times on both kernels (one
#                       more boot of each, under that LRU) when one of its
#                       tests passed unpatched and not patched (default 3;
#                       0: no second round)
#   --source DIR        a kernel source tree to build them from (default:
#                       the unpatched base, tag execguard-base, of the git
#                       tree kernel/build.sh keeps next to the patched
#                       kernel: the series does not change these tests, and
#                       both kernels run the same binaries)
#   --swap KIND         zram (1 GiB), file (512 MiB swap file on the ext4
#                       disk), or auto (default: zram if the booted kernel
#                       has it, CONFIG_ZRAM, else file); the table says
#                       which each run had
#   --timeout SEC       the most one selftest program may take in the
#                       guest (default 1800); the VM's timeout follows
#   --results DIR       keep every program's output, exit status and time
#                       and the consoles there, one directory per kernel
#                       and LRU (default: a temporary directory, removed)
#   --report            run nothing: print the table of what --results DIR
#                       holds (e.g. of a run with --kernels unpatched and
#                       one with --kernels patched into the same DIR)
#   -h, --help          this text
#
# The programs are built as their Makefile builds them (make in
# tools/testing/selftests/cgroup: gcc -Wall -pthread, no -O; CFLAGS and
# USERCFLAGS from the environment are not passed on): at -O2 gcc removes
# alloc_anon()'s malloc-write-free and test_memcg_min/low/max/oom_* fail on
# any kernel. Each (kernel, LRU) is one boot of a 1 GiB guest (init mode,
# no systemd) with swap, the LRU chosen through
# /sys/kernel/mm/lru_gen/enabled before any test; the programs run from an
# ext4 working directory (their page cache must be a file's, not shmem),
# with the loopback interface up (test_memcg_sock connects to localhost).
# OOM kills are expected (--allow-oom-kill); any other kernel report is
# shown under the table.
#
# Some of these tests pass or fail by chance under TCG on a loaded host
# (test_memcg_min, test_memcg_reclaim, test_cgfreezer_ptrace have each
# failed once and passed once on the same kernel): so a test that passed
# unpatched and not patched is run again (--confirm) on both. A cell is
# ok, fail or skip when every run of it said so, else "K/N ok".
#
# Exit status: 0 when no test that passed in every run on the unpatched
# kernel failed (or skipped, or gave no result) in every run on the
# patched one under the same LRU, or when only one kernel ran; 1 when one
# did ("REGRESSION"; one that passed in some patched runs is marked
# "FLAKY-PATCHED" and does not count), or a boot gave no result at all; 2
# on bad usage; 77 (skip) when qemu is not installed.

set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
repo=$(cd "$here/../.." && pwd)

cmdline="$0$(printf ' %q' "$@")"
bzimage=${EXECGUARD_BZIMAGE:-}
unpatched=
kernels=both
lrus=both
tests="test_memcontrol test_core test_kmem test_freezer"
confirm=3
runs=1
source=
swap=auto
per_test=1800
results=
report=false

usage() { echo "usage: $0 [--bzimage PATH] [--unpatched-bzimage PATH] [--kernels both|patched|unpatched] [--lru both|classic|mglru] [--tests \"NAME...\"] [--runs N] [--confirm N] [--source DIR] [--swap auto|zram|file] [--timeout SEC] [--results DIR] [--report]" >&2; exit 2; }
die() { echo "run-cgroup-selftests.sh: error: $*" >&2; exit 1; }
note() { echo "run-cgroup-selftests.sh: $*" >&2; }

while [ $# -gt 0 ]; do
	case $1 in
	--bzimage) bzimage=${2:?}; shift ;;
	--unpatched-bzimage) unpatched=${2:?}; shift ;;
	--kernels) kernels=${2:?}; shift ;;
	--lru) lrus=${2:?}; shift ;;
	--tests) tests=${2:?}; shift ;;
	--confirm) confirm=${2:?}; shift ;;
	--runs) runs=${2:?}; shift ;;
	--source) source=${2:?}; shift ;;
	--swap) swap=${2:?}; shift ;;
	--timeout) per_test=${2:?}; shift ;;
	--results) results=${2:?}; shift ;;
	--report) report=true ;;
	-h | --help) sed -n '3,/^$/s/^# \{0,1\}//p' "$0"; exit 0 ;;
	*) echo "run-cgroup-selftests.sh: unknown argument $1" >&2; usage ;;
	esac
	shift
done
case $kernels in both) kernels="unpatched patched" ;; patched | unpatched) ;; *) usage ;; esac
case $lrus in both) lrus="classic mglru" ;; classic | mglru) ;; *) usage ;; esac
case $swap in auto | zram | file) ;; *) usage ;; esac
[[ $per_test =~ ^[1-9][0-9]*$ ]] || usage
[[ $confirm =~ ^[0-9]+$ ]] || usage
[[ $runs =~ ^[1-9][0-9]*$ ]] || usage
read -r -a test_list <<< "$tests"
[ ${#test_list[@]} -gt 0 ] || usage
for t in "${test_list[@]}"; do
	[[ $t =~ ^test_[a-z0-9_]+$ ]] || die "--tests: $t is not a selftest program's name"
done
if $report && ! [ -d "$results" ]; then
	die "--report needs --results DIR, the directory of an earlier run"
fi
$report || command -v qemu-system-x86_64 > /dev/null || { echo "SKIP: qemu-system-x86_64 not installed" >&2; exit 77; }

# The guest reads the programs from the host's root over 9p, but its /tmp
# is its own: work under /var/tmp.
work=$(mktemp -d /var/tmp/execguard-cgroup-selftests.XXXXXX)
trap 'rm -rf "$work"' EXIT
if [ -n "$results" ]; then
	mkdir -p "$results"
	results=$(cd "$results" && pwd -P)
else
	results=$work/results
fi

# --- in the guest --------------------------------------------------------------
# Arguments: lru_gen (y/n), swap, the programs' directory, the timeout per
# program, the boot's number (1: the first round, 2: --confirm), the number
# of runs, the programs. Writes to /results: info.BOOT, and PROG.I.txt
# (its output) and PROG.I.rc ("exit seconds") for its I-th run.
# shellcheck disable=SC2016 # expanded in the guest
guest='
set -u
lru_gen=$1 swap=$2 bin=$3 per_test=$4 boot=$5 runs=$6; shift 6
out=/results
info=$out/info.$boot
echo "$lru_gen" > /sys/kernel/mm/lru_gen/enabled
echo "lru_gen $(cat /sys/kernel/mm/lru_gen/enabled)" > $info
if [ "$swap" = auto ]; then
	if [ -e /sys/block/zram0 ]; then swap=zram; else swap=file; fi
fi
case $swap in
zram)
	[ -e /sys/block/zram0 ] || { echo "swap none: the kernel has no zram (CONFIG_ZRAM)" >> $info; exit 1; }
	echo 1G > /sys/block/zram0/disksize && mkswap /dev/zram0 > /dev/null && swapon /dev/zram0 ||
		{ echo "swap none: zram setup failed" >> $info; exit 1; }
	echo "swap zram 1G ($(grep -o "\[[a-z0-9-]*\]" /sys/block/zram0/comp_algorithm))" >> $info
	;;
file)
	dd if=/dev/zero of=swapfile bs=1M count=512 status=none && chmod 600 swapfile &&
		mkswap swapfile > /dev/null && swapon swapfile ||
		{ echo "swap none: swap file setup failed" >> $info; exit 1; }
	echo "swap file 512M on $(findmnt -n -o FSTYPE -T .)" >> $info
	;;
esac
echo "cwd $(findmnt -n -o FSTYPE -T .)" >> $info
# test_memcg_sock talks TCP to localhost, as on any machine: loopback up
ip link set lo up && echo "lo up" >> $info
echo "kernel $(uname -r)" >> $info
n=0
while [ $n -lt $runs ]; do
	n=$((n + 1))
	for t in "$@"; do
		i=$(( $(ls $out/$t.*.rc 2> /dev/null | wc -l) + 1 ))
		s=$(date +%s)
		rc=0
		# line-buffered: the programs fork with a full stdio buffer,
		# and a child would print its parent'"'"'s lines again
		timeout -k 10 "$per_test" stdbuf -oL -eL "$bin/$t" > "$out/$t.$i.txt" 2>&1 || rc=$?
		echo "$rc $(( $(date +%s) - s ))" > "$out/$t.$i.rc"
		echo "cgroup-selftests: $t run $i: exit $rc, $(( $(date +%s) - s )) s"
	done
done
'

# boot KERNEL-NAME LRU BOOT RUNS PROGRAM...: one boot, into $results/NAME-LRU
boot() {
	local k=$1 lru=$2 n=$3 runs=$4 lru_gen=n rc=0 start
	shift 4
	local dir=$results/$k-$lru
	[ "$lru" = mglru ] && lru_gen=y
	mkdir -p "$dir"
	[ "$n" = 1 ] && rm -f "$dir"/*
	note "$k-$lru: boot $n, ${kernel[$k]}: $* ($runs run(s) each)"
	start=$(date +%s)
	"$here/vm-run.sh" --kernel "${kernel[$k]}" --mem 1G --disk 2G --allow-oom-kill \
		--timeout $(($# * runs * (per_test + 20) + 600)) --results "$dir" --log "$dir/console.$n.log" --quiet -- \
		bash -c "$guest" guest "$lru_gen" "$swap" "$bin" "$per_test" "$n" "$runs" "$@" 2> "$dir/vm-run.$n.log" || rc=$?
	echo "$rc $(($(date +%s) - start))" > "$dir/vm-exit.$n"
	echo "${kernel[$k]}" > "$dir/bzimage"
	note "$k-$lru: boot $n: VM exit $rc, $(($(date +%s) - start)) s"
}

# --- the results ---------------------------------------------------------------
cases() { cat "$results/cases/$1" 2> /dev/null; }
# result RUN PROGRAM CASE: ok, fail or skip when every run of PROGRAM
# said so, else "K/N ok"; - when no run gave a result for CASE (the
# program crashed or timed out before it, or no boot ran it)
result() {
	local f ok=0 n=0 r all=
	for f in "$results/$1/$2".*.txt; do
		[ -f "$f" ] || continue
		if grep -q '^1\.\.0 # SKIP' "$f"; then
			r=skip
		else
			r=$(awk -v c="$3" '
				$1 == "ok" && $3 == "#" && $4 == "SKIP" && $5 == c { r = "skip" }
				$1 == "ok" && $3 == c { r = "ok" }
				$1 == "not" && $2 == "ok" && $4 == c { r = "fail" }
				END { print (r == "" ? "-" : r) }' "$f")
		fi
		n=$((n + 1))
		[ "$r" = ok ] && ok=$((ok + 1))
		if [ -z "$all" ]; then all=$r; elif [ "$all" != "$r" ]; then all=mixed; fi
	done
	if [ "$n" = 0 ]; then echo -; elif [ "$all" = mixed ]; then echo "$ok/$n ok"; else echo "$all"; fi
}
# verdict U P: REGRESSION when U (unpatched) is ok and P has no pass,
# FLAKY-PATCHED when P has some, else nothing
verdict() {
	[ "$1" = ok ] || return 0
	case $2 in
	ok | '') ;;
	0/*) echo REGRESSION ;;
	*/*) echo FLAKY-PATCHED ;;
	*) echo REGRESSION ;;
	esac
}

# --- run ---------------------------------------------------------------------------
declare -A kernel
if ! $report; then
	for k in $kernels; do
		if [ "$k" = patched ]; then
			[ -n "$bzimage" ] || bzimage=$("$repo/kernel/build.sh" | tail -n 1)
			kernel[$k]=$bzimage
		else
			[ -n "$unpatched" ] || unpatched=$("$repo/kernel/build.sh" --unpatched | tail -n 1)
			kernel[$k]=$unpatched
		fi
		[ -f "${kernel[$k]}" ] || die "$k kernel ${kernel[$k]} not found"
		note "$k kernel: ${kernel[$k]}"
	done

	# The selftests, as their Makefile builds them.
	if [ -z "$source" ]; then
		# kernel/build.sh's layout: DIR/<variant>/bzImage and DIR/src,
		# a git tree whose execguard-base tag is the unpatched source
		k=${kernel[patched]:-${kernel[unpatched]}}
		git_src=$(cd "$(dirname "$k")/.." && pwd)/src
		git -C "$git_src" rev-parse -q --verify execguard-base > /dev/null 2>&1 ||
			die "no kernel source tree with the tag execguard-base at $git_src (kernel/build.sh's); use --source DIR"
		source=$work/src
		mkdir -p "$source"
		st=tools/testing/selftests
		mapfile -t headers < <(git -C "$git_src" ls-tree --name-only execguard-base "$st/" | grep '\.h$')
		git -C "$git_src" archive execguard-base "$st/lib.mk" "$st/cgroup" "$st/clone3" "$st/pidfd" \
			scripts/subarch.include "${headers[@]}" | tar -x -C "$source"
		note "selftests from $git_src at execguard-base ($(git -C "$git_src" log -1 --format=%s execguard-base))"
	fi
	cgdir=$source/tools/testing/selftests/cgroup
	[ -f "$cgdir/Makefile" ] || die "$cgdir/Makefile not found (--source must be a kernel source tree)"
	bin=$work/bin
	mkdir -p "$bin"
	targets=()
	for t in "${test_list[@]}"; do
		[ -f "$cgdir/$t.c" ] || die "$cgdir/$t.c not found"
		targets+=("$bin/$t")
	done
	env -u CFLAGS -u USERCFLAGS -u LDFLAGS -u USERLDFLAGS make -s -C "$cgdir" OUTPUT="$bin" "${targets[@]}" > "$work/make.log" 2>&1 ||
		{ cat "$work/make.log" >&2; die "building the selftests failed"; }
	# Every test case of each program, in order, from its tests[] table
	# (T(name) entries), kept with the results: one that prints no result
	# (a crash, a timeout) is not lost from the table.
	mkdir -p "$results/cases"
	for t in "${test_list[@]}"; do
		grep -oE '^[[:space:]]*T\(test_[a-z0-9_]+\)' "$cgdir/$t.c" | grep -oE 'test_[a-z0-9_]+' > "$results/cases/$t" || true
		[ -s "$results/cases/$t" ] || die "$cgdir/$t.c: no T(...) entries in its tests[] table"
	done

	for k in $kernels; do
		for lru in $lrus; do
			boot "$k" "$lru" 1 "$runs" "${test_list[@]}"
		done
	done
	# The second round: the programs with a test that passed unpatched
	# and not patched, again on both kernels.
	if [ "$confirm" -gt 0 ] && [ -n "${kernel[unpatched]:-}" ] && [ -n "${kernel[patched]:-}" ]; then
		for lru in $lrus; do
			again=()
			for t in "${test_list[@]}"; do
				while read -r c; do
					if [ -n "$(verdict "$(result "unpatched-$lru" "$t" "$c")" "$(result "patched-$lru" "$t" "$c")")" ]; then
						again+=("$t")
						break
					fi
				done < <(cases "$t")
			done
			[ ${#again[@]} -gt 0 ] || continue
			for k in unpatched patched; do
				boot "$k" "$lru" 2 "$confirm" "${again[@]}"
			done
		done
	fi
fi

# --- the table -------------------------------------------------------------------
columns=()
for k in $kernels; do
	for lru in $lrus; do
		if [ -f "$results/$k-$lru/bzimage" ]; then
			columns+=("$k-$lru")
		else
			note "no $k-$lru run in $results"
		fi
	done
done
[ ${#columns[@]} -gt 0 ] || die "no run to show in $results"
echo
echo "cgroup selftests (${test_list[*]}), unpatched vs patched, classic LRU vs MGLRU"
for c in "${columns[@]}"; do
	printf '  %-18s %s; %s\n' "$c:" "$(cat "$results/$c/bzimage")" \
		"$( (grep -E '^(swap|kernel|lru_gen) ' "$results/$c/info.1" 2> /dev/null || echo 'no info: the guest did not start the tests') |
			tr '\n' ';' | sed 's/;$//; s/;/; /g')"
done
w=4
for t in "${test_list[@]}"; do
	while read -r c; do
		[ $((${#t} + 1 + ${#c})) -gt "$w" ] && w=$((${#t} + 1 + ${#c}))
	done < <(cases "$t")
done
printf '\n%-*s' "$w" "test"
for c in "${columns[@]}"; do printf '  %-17s' "$c"; done
echo
regressions=0
flaky=0
for t in "${test_list[@]}"; do
	while read -r c; do
		line=$(printf '%-*s' "$w" "$t/$c")
		declare -A cell=()
		for col in "${columns[@]}"; do
			cell[$col]=$(result "$col" "$t" "$c")
			line+=$(printf '  %-17s' "${cell[$col]}")
		done
		for lru in $lrus; do
			v=$(verdict "${cell[unpatched-$lru]:-}" "${cell[patched-$lru]:-}")
			[ -n "$v" ] || continue
			line+=" $v($lru)"
			if [ "$v" = REGRESSION ]; then regressions=$((regressions + 1)); else flaky=$((flaky + 1)); fi
		done
		echo "${line%"${line##*[! ]}"}"
		unset cell
	done < <(cases "$t")
done
echo
noresult=0
for c in "${columns[@]}"; do
	for n in 1 2; do
		[ -f "$results/$c/vm-exit.$n" ] || continue
		read -r vrc vsec < "$results/$c/vm-exit.$n"
		times=$(grep -h '^cgroup-selftests: ' "$results/$c/console.$n.log" 2> /dev/null | tr -d '\r' |
			sed 's/^cgroup-selftests: //' | tr '\n' ';' | sed 's/;$//; s/;/; /g')
		echo "$c, boot $n: VM exit $vrc after $vsec s; ${times:-no program ran}"
		if [ "$vrc" = 126 ] || grep -q 'kernel log shows a splat' "$results/$c/vm-run.$n.log" 2> /dev/null; then
			echo "  kernel report (not an OOM kill):"
			grep -A 10 'kernel log shows a splat' "$results/$c/vm-run.$n.log" | sed 's/^/    /'
		fi
		[ -f "$results/$c/info.$n" ] || noresult=$((noresult + 1))
	done
done
echo
echo "command: ${EXECGUARD_BZIMAGE:+EXECGUARD_BZIMAGE=$EXECGUARD_BZIMAGE }$cmdline"
[ "$flaky" = 0 ] || echo "$flaky test(s) passed in every unpatched run and in some patched runs (FLAKY-PATCHED)"
if [ "$regressions" -gt 0 ]; then
	echo "$regressions test(s) passed in every run on the unpatched kernel and in none on the patched one"
	exit 1
fi
if [ "$noresult" -gt 0 ]; then
	echo "$noresult boot(s) gave no result"
	exit 1
fi
if [ -f "$results/unpatched-classic/bzimage" ] || [ -f "$results/unpatched-mglru/bzimage" ]; then
	if [ -f "$results/patched-classic/bzimage" ] || [ -f "$results/patched-mglru/bzimage" ]; then
		echo "no test that passes on the unpatched kernel fails on the patched one"
		exit 0
	fi
fi
echo "one kernel only: nothing compared"
