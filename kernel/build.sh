#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the execguard test kernel: Debian's linux-source-6.12 with the
# patch series in kernel/patches, configured from "make tinyconfig" plus
# kernel/config/execguard.config (and kernel/config/debug.config with
# --debug), and the memory.exec_protect selftest binary.
#
# Idempotent: the work lives outside the repository, in
# $EXECGUARD_KERNEL_DIR (default /var/tmp/execguard-kernel), keyed by hashes
# of the series and the config fragments. When nothing changed it only
# prints the result; when something did, git restores the files the old
# series touched and make rebuilds only what depends on them.
#
# The last line on stdout is the path of the bzImage. The selftest binaries
# are in the "selftests" directory next to it. Everything else goes to
# stderr.
#
# Usage: kernel/build.sh [--debug | --wide | --lockstat | --unpatched | --execstorm]
#                        [--jump-label] [--jobs N]
#                        [--source-only]
#   --debug        add KASAN and lockdep (kernel/config/debug.config)
#   --wide         add THP (read-only THP for file text), NUMA and all of
#                  DAMON (kernel/config/wide.config)
#   --lockstat     add lock statistics (kernel/config/lockstat.config) and
#                  apply kernel/execstorm/ (unless EXECGUARD_EXECSTORM=0) and
#                  kernel/lockstat/*.patch after the series (i_mmap_rwsem
#                  counting for bench/immap-lock.sh, not part of the series),
#                  in its own directory ($EXECGUARD_KERNEL_DIR-lockstat)
#   --unpatched    the same kernel without the series (what users run
#                  today), in its own directory ($EXECGUARD_KERNEL_DIR-unpatched)
#   --execstorm    the base with only kernel/execstorm/ (the binfmt_elf and
#                  mm/vma pair, a series of its own), in its own directory
#                  ($EXECGUARD_KERNEL_DIR-execstorm)
#   --jump-label   add CONFIG_JUMP_LABEL (kernel/config/jump-label.config),
#                  in its own directory ($EXECGUARD_KERNEL_DIR[-VARIANT]-jl):
#                  static keys as distributions build them, for counting
#                  what the series costs (bench/reclaim-cost.sh --insns). Not
#                  in the test kernel: under TCG with 2 vCPUs a guest once
#                  ran a stale int3 after the key's text patching had ended
#                  (kernel/README.md)
#   --jobs N       make -jN (default 3)
#   --source-only  only prepare the patched source tree; print its path

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
kdir=${EXECGUARD_KERNEL_DIR:-/var/tmp/execguard-kernel}
tarball=/usr/src/linux-source-6.12.tar.xz
patches=$here/patches
variant=default
jobs=3
source_only=false
jump_label=false

log() { echo "build.sh: $*" >&2; }
die() { log "error: $*"; exit 1; }

while [ $# -gt 0 ]; do
	case $1 in
	--debug) variant=debug ;;
	--wide) variant=wide ;;
	--lockstat) variant=lockstat ;;
	--unpatched) variant=unpatched ;;
	--execstorm) variant=execstorm ;;
	--jump-label) jump_label=true ;;
	--jobs) jobs=$2; shift ;;
	--jobs=*) jobs=${1#--jobs=} ;;
	--source-only) source_only=true ;;
	-h|--help) sed -n '3,/^[^#]/{/^#/s/^# \{0,1\}//p}' "$0"; exit 0 ;;
	*) die "unknown option $1" ;;
	esac
	shift
done

fragments=("$here/config/execguard.config")
[ "$variant" = debug ] && fragments+=("$here/config/debug.config")
[ "$variant" = wide ] && fragments+=("$here/config/wide.config")
[ "$variant" = lockstat ] && fragments+=("$here/config/lockstat.config")
$jump_label && fragments+=("$here/config/jump-label.config")

# --- build dependencies --------------------------------------------------

# The series is made against one Debian version of the source (Debian
# updates linux-source-6.12 with each stable release, and a patch's context
# may change): install exactly that one.
base_version=$(cat "$here/base-version")
need_pkgs=()
[ -f "$tarball" ] && [ "$(dpkg-query -W -f='${Version}' linux-source-6.12 2>/dev/null)" = "$base_version" ] ||
	need_pkgs+=("linux-source-6.12=$base_version")
for tool in gcc:gcc make:make flex:flex bison:bison bc:bc cpio:cpio \
	    pahole:dwarves perl:perl git:git xz:xz-utils; do
	command -v "${tool%%:*}" >/dev/null 2>&1 || need_pkgs+=("${tool#*:}")
done
[ -f /usr/include/libelf.h ] || need_pkgs+=(libelf-dev)
[ -f /usr/include/openssl/ssl.h ] || need_pkgs+=(libssl-dev)
if [ ${#need_pkgs[@]} -gt 0 ]; then
	[ "$(id -u)" = 0 ] || die "missing packages, run as root or install: ${need_pkgs[*]}"
	log "installing ${need_pkgs[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -q >&2
	apt-cache madison linux-source-6.12 | grep -qF "| $base_version |" ||
		die "linux-source-6.12 $base_version (kernel/base-version, the series' base) is not in the apt sources; they have: $(apt-cache madison linux-source-6.12 | awk -F'|' '{print $2}' | xargs)"
	apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends --allow-downgrades "${need_pkgs[@]}" >&2
fi
[ -f "$tarball" ] || die "$tarball not found after installing linux-source-6.12"

# Its own source tree and lock: building it never waits for, or makes
# wait, the patched kernel's builds.
[ "$variant" = unpatched ] && kdir=$kdir-unpatched
# The lockstat variant's extra patches must not reach the other variants'
# shared source tree
[ "$variant" = lockstat ] && kdir=$kdir-lockstat
[ "$variant" = execstorm ] && kdir=$kdir-execstorm
$jump_label && kdir=$kdir-jl
mkdir -p "$kdir"
exec 9>"$kdir/.lock"
flock 9

hash_files() { cat "$@" | sha256sum | cut -c1-16; }

# --- source tree: the tarball as a git base commit ------------------------

src=$kdir/src
git_src() {
	git -C "$src" -c user.name=execguard -c user.email=execguard@localhost -c gc.auto=0 \
		-c core.autocrlf=false "$@"
}
base_key=$(stat -c '%s-%Y' "$tarball")
if [ ! -d "$src/.git" ] || [ "$(cat "$src/.execguard-base" 2>/dev/null)" != "$base_key" ]; then
	log "extracting $tarball"
	rm -rf "$src" "$kdir/src.tmp"
	mkdir -p "$kdir/src.tmp"
	tar -xf "$tarball" -C "$kdir/src.tmp"
	mv "$kdir/src.tmp/linux-source-6.12" "$src"
	rmdir "$kdir/src.tmp"
	# Track every file, also those the tarball's .gitignore files ignore
	# (Debian's ignores every top-level path, the kernel's dotfiles)
	git init -q "$src"
	git_src add -A -f
	git_src commit -q -m "linux-source-6.12 $(make -s -C "$src" kernelversion)"
	git_src tag execguard-base
	echo "$base_key" >"$src/.execguard-base"
	rm -f "$src/.execguard-series"
fi

series=()
case $variant in
unpatched) ;;
execstorm)
	mapfile -t series < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' -e 's|^|../execstorm/|' \
		"$here/execstorm/series") ;;
*) mapfile -t series < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$patches/series") ;;
esac
series_files=("$patches/series")
for p in "${series[@]}"; do
	[ -f "$patches/$p" ] || die "patch $p in series not found"
	series_files+=("$patches/$p")
done
if [ "$variant" = lockstat ]; then
	# The exec-storm series (issue 17: binfmt_elf, mm/vma; a proposal of
	# its own, not part of memory.exec_protect's), unless
	# EXECGUARD_EXECSTORM=0 asks for the "before" kernel; then the
	# counting instrumentation
	if [ "${EXECGUARD_EXECSTORM:-1}" != 0 ]; then
		while read -r p; do
			series+=("../execstorm/$p")
			series_files+=("$here/execstorm/$p")
		done < <(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$here/execstorm/series")
	fi
	for p in "$here"/lockstat/*.patch; do
		series+=("../lockstat/${p##*/}")
		series_files+=("$p")
	done
fi
series_key=$(hash_files "${series_files[@]}")

if [ "$(cat "$src/.execguard-series" 2>/dev/null)" != "$series_key" ]; then
	log "applying the series (${#series[@]} patches)"
	rm -f "$src/.execguard-series"
	# Apply the series to the base in a scratch index, then move the work
	# tree to the result: only the files whose contents differ from what
	# is there are written, so make rebuilds only what the change touched
	# (a selftest-only change rebuilds no kernel object). Going back to
	# the base first would rewrite every file the old series touched.
	index=$src/.git/execguard-index
	rm -f "$index"
	GIT_INDEX_FILE=$index git_src read-tree execguard-base
	for p in "${series[@]}"; do
		GIT_INDEX_FILE=$index git_src apply --cached --whitespace=nowarn "$patches/$p" ||
			die "patch $p does not apply"
	done
	tree=$(GIT_INDEX_FILE=$index git_src write-tree)
	rm -f "$index"
	# Stat data first: a file that only looks changed (a copied tree) is
	# left alone
	git_src update-index -q --refresh >/dev/null || true
	git_src read-tree --reset -u "$tree"
	git_src clean -q -fdx -e .execguard-base
	echo "$series_key" >"$src/.execguard-series"
fi

if $source_only; then
	echo "$src"
	exit 0
fi

# --- configuration ---------------------------------------------------------

out=$kdir/build-$variant
result=$kdir/$variant
config_key=$(hash_files "${fragments[@]}")
mkdir -p "$out"
if [ ! -f "$out/.config" ] || [ "$(cat "$out/.execguard-config" 2>/dev/null)" != "$config_key" ]; then
	log "configuring $variant: tinyconfig + ${fragments[*]##*/}"
	rm -f "$out/.execguard-config"
	make -s -C "$src" O="$out" tinyconfig >&2
	"$src/scripts/kconfig/merge_config.sh" -m -O "$out" "$out/.config" \
		"${fragments[@]}" >"$out/merge_config.log" 2>&1 ||
		die "merge_config.sh failed, see $out/merge_config.log"
	make -s -C "$src" O="$out" olddefconfig >&2
	missing=$(sed -n 's/^\(CONFIG_[A-Z0-9_]*=[ym]\)$/\1/p' "${fragments[@]}" |
		  while read -r opt; do grep -qx "$opt" "$out/.config" || echo "$opt"; done)
	[ -z "$missing" ] || die "options not in the final .config: $(echo $missing)"
	echo "$config_key" >"$out/.execguard-config"
fi

# --- build ------------------------------------------------------------------

build_key="$series_key-$config_key-$(hash_files "$0")"
if [ -f "$result/bzImage" ] && [ "$(cat "$result/.execguard-build" 2>/dev/null)" = "$build_key" ]; then
	log "up to date ($variant)"
else
	log "building bzImage ($variant) in $out, make -j$jobs"
	start=$(date +%s)
	make -C "$src" O="$out" -j"$jobs" bzImage >"$out/build.log" 2>&1 || {
		tail -n 40 "$out/build.log" >&2
		die "kernel build failed, see $out/build.log"
	}
	log "bzImage built in $(( $(date +%s) - start )) s"

	selftests=$src/tools/testing/selftests/cgroup
	mkdir -p "$result/selftests"
	case $variant in unpatched|execstorm) has_selftest=false ;; *) has_selftest=true ;; esac
	! $has_selftest || gcc -O2 -Wall -pthread -I"$src/tools/testing/selftests" \
		-o "$result/selftests/test_exec_protect.new" \
		"$selftests/test_exec_protect.c" "$selftests/cgroup_util.c" >&2 ||
		die "selftest build failed"
	! $has_selftest ||
		mv "$result/selftests/test_exec_protect.new" "$result/selftests/test_exec_protect"
	cp "$out/arch/x86/boot/bzImage" "$result/bzImage.new"
	mv "$result/bzImage.new" "$result/bzImage"
	echo "$build_key" >"$result/.execguard-build"
fi

echo "$result/bzImage"
