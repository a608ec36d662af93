#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Builds the Debian package from debian/ on Debian 12 and checks it:
# dpkg-buildpackage -us -uc -b in a scratch copy of this tree (the tree
# itself stays clean), then the package's files, conffiles, Depends and
# maintainer scripts, then lintian --pedantic (errors, warnings and pedantic
# tags fail the run).
# Installs what it needs with apt-get first (as root): build-essential,
# dpkg-dev, debhelper, lintian and debian/control's Build-Depends.
#
# Usage: tools/deb.sh [--version VERSION] [--keep]
#        tools/deb.sh --check DEB
#   --version VERSION  build as VERSION, newer than debian/changelog's, to
#                      test an upgrade (a changelog entry in the scratch
#                      copy only), e.g. --version 0.1.0+rebuild1
#   --keep             keep the scratch tree (build/deb/scratch)
#   --check DEB        only check a package built before (no build, no
#                      lintian)
# Results in build/deb/: execguard_VERSION_ARCH.deb, the .changes and
# .buildinfo, the source package (.dsc, .tar.xz, for lintian), build.log
# and lintian.txt. Other versions' packages stay there.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
out=$repo/build/deb
version=
keep=false
check=
arch=$(dpkg --print-architecture)
while [ $# -gt 0 ]; do
	case "$1" in
	--version) version=${2:?--version needs a version}; shift 2 ;;
	--version=*) version=${1#--version=}; shift ;;
	--keep) keep=true; shift ;;
	--check) check=${2:?--check needs a .deb}; shift 2 ;;
	*) echo "usage: $0 [--version VERSION] [--keep] | --check DEB" >&2; exit 2 ;;
	esac
done
start=$(date +%s)
say() { echo "== $*"; }
die() { echo "deb: $*" >&2; exit 1; }

# --- contents ----------------------------------------------------------------
# Exactly these files (directories aside): a file missing or one more
# (a test program, a static library) fails.
expected=(
	./etc/execguard.conf
	./lib/systemd/system/execguard-metrics.service
	./lib/systemd/system/execguard-metrics.timer
	./lib/systemd/system/execguardd.service
	./usr/bin/execguardctl
	./usr/lib/execguard.d/10-recovery.conf
	./usr/lib/systemd/catalog/execguard.catalog
	./usr/libexec/execguard/execguard-oci-hook
	./usr/sbin/execguardd
	./usr/share/bash-completion/completions/execguardctl
	./usr/share/bash-completion/completions/execguardd
	./usr/share/containers/oci/hooks.d/execguard.json
	./usr/share/dbus-1/system.d/org.execguard.Manager1.conf
	./usr/share/doc/execguard/README.md.gz
	./usr/share/doc/execguard/changelog.gz
	./usr/share/doc/execguard/copyright
	./usr/share/doc/execguard/examples/containers.conf
	./usr/share/doc/execguard/examples/lock-budget.conf
	./usr/share/doc/execguard/examples/no-protect.conf
	./usr/share/doc/execguard/examples/protect.conf
	./usr/share/man/man1/execguardctl.1.gz
	./usr/share/man/man5/execguard.conf.5.gz
	./usr/share/man/man8/execguard-oci-hook.8.gz
	./usr/share/man/man8/execguardd.8.gz
	./usr/share/zsh/vendor-completions/_execguardctl
	./usr/share/zsh/vendor-completions/_execguardd
)
bad=0
fail() { echo "FAIL: $*"; bad=1; }
has() { grep -qF -- "$1" "$2" || fail "$(basename "$2"): no \"$1\"${3:+ ($3)}"; }

# check_deb DEB CONTROL_DIR: files, conffiles, Depends, maintainer scripts.
check_deb() {
	local deb=$1 ctl=$2 listing files missing extra depends p f s
	say "checking $(basename "$deb")"
	listing=$(dpkg-deb -c "$deb")
	files=$(awk '$1 !~ /^d/ { print $6 }' <<< "$listing" | sort)
	missing=$(comm -23 <(printf '%s\n' "${expected[@]}" | sort) <(echo "$files"))
	extra=$(comm -13 <(printf '%s\n' "${expected[@]}" | sort) <(echo "$files"))
	for f in $missing; do fail "missing $f"; done
	for f in $extra; do fail "unexpected $f"; done
	[ -n "$(awk '$1 ~ /^d/ && $6 == "./etc/execguard.d/"' <<< "$listing")" ] || fail "no /etc/execguard.d/"
	for f in ./usr/sbin/execguardd ./usr/bin/execguardctl; do
		[ -n "$(awk -v f="$f" '$6 == f && $1 == "-rwxr-xr-x" && $2 == "root/root"' <<< "$listing")" ] ||
			fail "$f not an executable of root's"
	done

	rm -rf "$ctl"
	dpkg-deb -e "$deb" "$ctl"
	[ "$(cat "$ctl/conffiles" 2>/dev/null)" = /etc/execguard.conf ] ||
		fail "conffiles is not exactly /etc/execguard.conf: $(cat "$ctl/conffiles" 2>/dev/null)"
	depends=$(dpkg-deb -f "$deb" Depends)
	for p in libc6 libsystemd0 libmount1 libinih1 libjson-c5; do
		grep -qE "(^|, )$p( |,|$)" <<< "$depends" || fail "Depends lacks $p: $depends"
	done
	[ "$(dpkg-deb -f "$deb" Architecture)" = "$arch" ] || fail "Architecture is not $arch"
	# The programs say the package's version (meson's, set by debian/rules).
	rm -rf "$ctl.root"
	dpkg-deb -x "$deb" "$ctl.root"
	for p in usr/bin/execguardctl usr/sbin/execguardd; do
		[ "$("$ctl.root/$p" --version)" = "${p##*/} $(dpkg-deb -f "$deb" Version)" ] ||
			fail "$p --version says \"$("$ctl.root/$p" --version)\", the package is $(dpkg-deb -f "$deb" Version)"
	done
	rm -rf "$ctl.root"
	# The unit: enabled and started on install, restarted (not stopped
	# first) on upgrade, stopped on removal, forgotten on purge.
	for s in postinst prerm postrm; do
		[ -f "$ctl/$s" ] && sh -n "$ctl/$s" || fail "$s: missing or not valid sh"
	done
	has "deb-systemd-helper unmask 'execguardd.service'" "$ctl/postinst"
	has "deb-systemd-helper enable 'execguardd.service'" "$ctl/postinst"
	has "_dh_action=start" "$ctl/postinst" "start on install"
	has "_dh_action=restart" "$ctl/postinst" "restart on upgrade"
	has "deb-systemd-invoke \$_dh_action 'execguardd.service'" "$ctl/postinst"
	has "[ \"\$1\" = remove ] && [ -d /run/systemd/system ]" "$ctl/prerm" "stop on remove only"
	has "deb-systemd-invoke stop 'execguardd.service'" "$ctl/prerm"
	has "deb-systemd-helper purge 'execguardd.service'" "$ctl/postrm"
	has "rm -rf /run/execguard" "$ctl/postrm"
	has "rm -f /var/lib/prometheus/node-exporter/execguard.prom" "$ctl/postrm" "no stale metrics after removal"
	# The metrics timer: shipped, never enabled or started by the package.
	# (dh's "don't enable" snippet: enable only if the admin had it enabled.)
	has "deb-systemd-helper debian-installed 'execguard-metrics.timer'" "$ctl/postinst" "timer not enabled on install"
	has "deb-systemd-invoke stop execguard-metrics.timer execguard-metrics.service" "$ctl/prerm" "stop the timer on remove"
	! grep -q "deb-systemd-invoke .*execguard-metrics" "$ctl/postinst" ||
		fail "postinst starts execguard-metrics: $(grep "deb-systemd-invoke .*execguard-metrics" "$ctl/postinst")"
	[ $bad = 0 ] && echo "ok: files, conffiles, Depends ($depends), maintainer scripts"
	return 0
}
if [ -n "$check" ]; then
	ctl=$(mktemp -d)
	check_deb "$check" "$ctl"
	rm -rf "$ctl"
	[ $bad = 0 ] || { echo "deb: FAILED" >&2; exit 1; }
	echo "deb: OK"
	exit 0
fi

# --- the scratch copy ------------------------------------------------------
# What git tracks plus new files it does not ignore (not build/, not an
# earlier build's debian/execguard or obj-*): the working tree as committed
# or being edited. Without git: everything but .git and build*.
scratch=$out/scratch
rm -rf "$scratch"
mkdir -p "$scratch/tree"
if git -C "$repo" rev-parse --git-dir > /dev/null 2>&1; then
	git -C "$repo" ls-files -co --exclude-standard -z |
		while IFS= read -r -d '' f; do [ ! -e "$repo/$f" ] || printf '%s\0' "$f"; done |
		tar -C "$repo" --null -T - -cf - | tar -C "$scratch/tree" -xf -
else
	tar -C "$repo" --exclude=./.git --exclude='./build*' -cf - . | tar -C "$scratch/tree" -xf -
fi

# --- build tools and Build-Depends -----------------------------------------
need=false
for c in dpkg-buildpackage dpkg-checkbuilddeps dh lintian gcc make; do
	command -v "$c" > /dev/null || need=true
done
$need || (cd "$scratch/tree" && dpkg-checkbuilddeps > /dev/null 2>&1) || need=true
if $need; then
	[ "$(id -u)" = 0 ] || die "build tools or Build-Depends missing; run as root to install them"
	say "installing build tools and Build-Depends (apt-get)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq --no-install-recommends build-essential dpkg-dev debhelper lintian > /dev/null
	apt-get build-dep -y -qq --no-install-recommends "$scratch/tree" > /dev/null
	(cd "$scratch/tree" && dpkg-checkbuilddeps) || die "Build-Depends still not satisfied"
fi

# --- version -----------------------------------------------------------------
if [ -n "$version" ]; then
	cur=$(dpkg-parsechangelog -l "$scratch/tree/debian/changelog" -S Version)
	case "$version" in *-*) die "--version $version: a native package's version has no Debian revision (-N)" ;; esac
	dpkg --compare-versions "$version" gt "$cur" || die "--version $version is not newer than $cur"
	# Dated now, and after the entry below it (lintian: a new date).
	ts=$(dpkg-parsechangelog -l "$scratch/tree/debian/changelog" -S Timestamp)
	now=$(date +%s)
	[ "$now" -gt "$ts" ] || now=$((ts + 1))
	{
		printf 'execguard (%s) unstable; urgency=medium\n\n' "$version"
		printf '  * Local build as %s (tools/deb.sh --version).\n\n' "$version"
		printf ' -- execguard developers <execguard@example.org>  %s\n\n' "$(date -R -u -d "@$now")"
		cat "$scratch/tree/debian/changelog"
	} > "$scratch/changelog.new"
	mv "$scratch/changelog.new" "$scratch/tree/debian/changelog"
	# The DaemonSet names the image deploy/kubernetes/build-image.sh tags
	# from the changelog, execguard:VERSION (tests/test-k8s-manifest.py,
	# run by the build, checks it): this build's version.
	k8s=$scratch/tree/deploy/kubernetes/execguard.yaml
	if [ -f "$k8s" ]; then
		sed -i "s|image: execguard:${cur//./\\.}\$|image: execguard:$version|" "$k8s"
		grep -q "image: execguard:$version\$" "$k8s" || die "$k8s names no image execguard:$cur to make $version"
	fi
fi
ver=$(dpkg-parsechangelog -l "$scratch/tree/debian/changelog" -S Version)
src=$scratch/execguard-${ver%%-*}
mv "$scratch/tree" "$src"

# --- build -------------------------------------------------------------------
# Other versions' packages stay (an upgrade test needs two).
rm -f "$out"/execguard{,-dbgsym}_"$ver"[._]* "$out"/build.log "$out"/lintian.txt
log=$out/build.log
say "building execguard $ver in $src (log: $log)"
# The source package only for lintian's source checks (debian/copyright,
# debian/control, debian/rules); the build itself is binary only.
(cd "$scratch" && dpkg-source --build "${src##*/}") > "$log" 2>&1 ||
	{ tail -n 30 "$log"; die "dpkg-source failed"; }
(cd "$src" && nice -n 10 dpkg-buildpackage -us -uc -b) >> "$log" 2>&1 ||
	{ tail -n 60 "$log"; die "dpkg-buildpackage failed (log: $log)"; }
# meson test's summary, on one line.
grep -E '^(Ok|Fail|Skipped|Timeout):' "$log" | tr -s ' \n' ' ' | sed 's/^/tests (unit, docs): /; s/ $//' && echo
shopt -s nullglob # no -dbgsym package with DEB_BUILD_OPTIONS=noautodbgsym
for f in "$scratch"/execguard{,-dbgsym}_"$ver"[._]*; do mv "$f" "$out/"; done
shopt -u nullglob
deb=$out/execguard_${ver}_${arch}.deb
changes=$out/execguard_${ver}_${arch}.changes
[ -f "$deb" ] || die "no $deb"

check_deb "$deb" "$scratch/control"

# --- lintian -----------------------------------------------------------------
say "lintian $(basename "$changes") execguard_${ver}.dsc"
lint=0
lintian --pedantic --display-info --fail-on error,warning,pedantic "$changes" "$out/execguard_${ver}.dsc" > "$out/lintian.txt" 2>&1 || lint=$?
cat "$out/lintian.txt"
[ $lint = 0 ] || fail "lintian --pedantic: errors, warnings or pedantic tags (exit $lint)"

$keep || rm -rf "$scratch"
say "$(basename "$deb") in $out ($(( $(date +%s) - start )) s)"
[ $bad = 0 ] || { echo "deb: FAILED" >&2; exit 1; }
echo "deb: OK"
