#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole test suite, on a fresh Debian 12 machine as root: installs
# what it needs, builds with -Werror, runs the unit, host integration and
# fuzz-corpus tests, runs them again under AddressSanitizer and
# UndefinedBehaviorSanitizer, runs each fuzzer for a while, builds the
# patched kernel and runs the VM tests on it, and closes with one line:
# N passed, N failed, N skipped.
# Environment: FUZZ_SECONDS (default 20 per fuzzer), BUILD_ROOT (build),
# TEST_TIMEOUT_MULTIPLIER (default 3: meson's per-test timeouts times this).
set -u
cd "$(dirname "$0")/.." || exit
top=$PWD
build_root=${BUILD_ROOT:-$top/build}
fuzz_seconds=${FUZZ_SECONDS:-20}
mkdir -p "$build_root"
extra="$build_root/extra-results.txt"
: > "$extra"
logs=()

step() { echo; echo "=== $*"; }
record() { echo "$1 $2" >> "$extra"; }

step "dependencies"
if ! tools/deps.sh all; then
	record FAIL deps
	python3 tools/summarize.py "extra:$extra"
	exit 1
fi

# meson_build NAME SETUP-ARGS...: configure and compile one build tree.
meson_build() {
	local name=$1 dir="$build_root/$1"
	shift
	step "build $name"
	if [ -d "$dir" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null || meson setup --wipe "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi && ninja -C "$dir" >"$dir.build.log" 2>&1
	local rc=$?
	if [ $rc -ne 0 ]; then
		tail -n 40 "$dir.build.log"
		record FAIL "build/$name"
		return 1
	fi
	record PASS "build/$name"
}

# meson_tests NAME LOGBASE MESON-TEST-ARGS...
meson_tests() {
	local name=$1 logbase=$2 dir="$build_root/$1"
	shift 2
	step "tests $name ($logbase)"
	rm -f "$dir/meson-logs/$logbase.json"
	# A meson timeout only stops a hung test; the tests wait for what
	# they test and end as soon as it happens. A kernel build beside
	# the suite made a 30,000-process host-scale run past its 900 s.
	meson test -C "$dir" --print-errorlogs --logbase "$logbase" \
		--timeout-multiplier "${TEST_TIMEOUT_MULTIPLIER:-3}" "$@"
	if [ -f "$dir/meson-logs/$logbase.json" ]; then
		logs+=("$name:$dir/meson-logs/$logbase.json")
	else
		record FAIL "tests/$name/$logbase"
	fi
}

if meson_build gcc -Dwerror=true -Dprefix=/usr -Dsysconfdir=/etc -Dlocalstatedir=/var; then
	meson_tests gcc testlog --suite unit --suite host --suite fuzz --suite docs
fi

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:strict_string_checks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
if meson_build sanitizers -Dwerror=true -Db_sanitize=address,undefined -Db_lundef=false; then
	meson_tests sanitizers testlog --suite unit --suite host --suite fuzz
fi

if CC=clang meson_build fuzz -Dwerror=true -Dfuzzers=true -Db_lundef=false \
	-Dc_args=-fsanitize=fuzzer-no-link,address,undefined \
	-Dc_link_args=-fsanitize=address,undefined; then
	step "fuzzers, $fuzz_seconds s each"
	for f in maps elf cnproc policy procstats cgroup prewarm textfault psi containers cgroupwatch; do
		work=$(mktemp -d)
		cp "tests/fuzz/corpus/$f/"* "$work/"
		if "$build_root/fuzz/tests/fuzz-$f" -max_total_time="$fuzz_seconds" -max_len=4096 -artifact_prefix="$build_root/fuzz-$f-" \
			-print_final_stats=1 "$work" >"$build_root/fuzz-$f.log" 2>&1; then
			echo "fuzz-$f: $(grep -E '^stat::number_of_executed_units' "$build_root/fuzz-$f.log" | awk '{print $2}') runs, no crash"
			record PASS "fuzz-run/$f"
		else
			tail -n 30 "$build_root/fuzz-$f.log"
			record FAIL "fuzz-run/$f"
		fi
		rm -rf "$work"
	done
fi

# The patched kernel, booted in qemu: its selftests under both LRUs,
# checkpatch over the series.
step "kernel: build the patched test kernel"
if bzimage=$(kernel/build.sh | tail -n 1) && [ -f "$bzimage" ]; then
	record PASS build/kernel
	export EXECGUARD_BZIMAGE=$bzimage
	[ -d "$build_root/gcc" ] && meson_tests gcc vmlog --suite vm
else
	record FAIL build/kernel
fi

step "summary"
python3 tools/summarize.py "${logs[@]}" "extra:$extra"
