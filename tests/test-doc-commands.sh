#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every command the documentation shows (code blocks of README.md,
# docs/*.md and the man pages; tests/doc-examples.py finds them) is run by
# a test, and this test says which:
#   execguardctl, execguardd  run by host-doc-commands against a daemon
#                             (here: they parse, no usage error)
#   systemctl, journalctl, ln run verbatim by the VM end-to-end scripts
#   podman run --annotation  the VM containers test runs such a container
#   apt install ./build/deb/… the package tools/deb.sh names for a version
#                             of debian/changelog, installed by systemd-e2e-deb
#   tools/, bench/, kernel/   an executable script that a test or CI runs
set -u
SRC=${SRC:?set by meson}
EXECGUARDCTL=${EXECGUARDCTL:?set by meson}
bad=0
fail() { echo "FAIL: $*"; bad=1; }
shopt -s nullglob
docs=("$SRC/README.md" "$SRC"/docs/*.md "$SRC"/man/*.scd)
vm_scripts=("$SRC"/tests/vm/e2e/*.sh "$SRC"/tests/vm/demo/*.sh "$SRC"/tests/vm/containers/*.sh)
shopt -u nullglob
list=$(python3 "$SRC/tests/doc-examples.py" commands "${docs[@]}") || fail "doc-examples.py"
n=0
while IFS=$'\t' read -r where cmd; do
	[ -n "$cmd" ] || continue
	n=$((n + 1))
	where=${where#"$SRC/"}
	case $cmd in
	execguardctl\ * | execguardctl)
		# No daemon here: anything but a usage error (2) is fine.
		first=${cmd%%|*}
		read -ra args <<< "${first#execguardctl}"
		DBUS_SYSTEM_BUS_ADDRESS=unix:path=/nonexistent "$EXECGUARDCTL" "${args[@]}" > /dev/null 2>&1
		[ $? != 2 ] || fail "$where: '$cmd' is a usage error"
		;;
	execguardd\ *)
		[[ $cmd == *--check-config* || $cmd == *--help* || $cmd == *--version* ]] ||
			fail "$where: '$cmd': only --check-config, --help and --version are checked here; add it to host-doc-commands"
		;;
	systemctl\ * | ln\ * | busctl\ *)
		grep -qF -- "$cmd" "${vm_scripts[@]}" ||
			fail "$where: '$cmd' is not run by tests/vm/e2e, demo or containers"
		;;
	journalctl\ *)
		# how many lines (-n N) is the reader's choice
		grep -qF -- "$(sed -E 's/ -n [0-9]+//' <<< "$cmd")" "${vm_scripts[@]}" ||
			fail "$where: '$cmd' is not run by tests/vm/e2e, demo or containers"
		;;
	podman\ run\ *--annotation\ io.execguard.protect=*)
		# the image and the value are the reader's; the VM runs containers
		# with the annotation
		grep -qF -- "--annotation io.execguard.protect=" "$SRC"/tests/vm/containers/*.sh ||
			fail "$where: '$cmd': no VM test runs a container with the annotation"
		;;
	apt\ install\ ./build/deb/*)
		# the name tools/deb.sh gives a version of debian/changelog (a
		# package built with --version adds one on top)
		f=${cmd##*/}
		v=${f#execguard_}
		v=${v%_"$(dpkg --print-architecture)".deb}
		sed -n 's/^execguard (\([^)]*\)).*/\1/p' "$SRC/debian/changelog" | grep -qxF -- "$v" ||
			fail "$where: '$cmd': not the name tools/deb.sh gives a version of debian/changelog"
		grep -qE 'apt_do( --conffiles [a-z]+)? install "\$old_deb"' "$SRC/tests/vm/e2e/inside-deb.sh" ||
			fail "$where: '$cmd': systemd-e2e-deb does not install tools/deb.sh's package"
		;;
	tools/* | bench/* | kernel/*)
		script=${cmd%% *}
		[ -x "$SRC/$script" ] || fail "$where: '$cmd': no executable $script"
		# tools/test.sh is the suite itself (CI runs it); the others are
		# run by a test script or exec a script meson runs as a test.
		if [ "$script" != tools/test.sh ] &&
			! grep -rqF -- "$script" "$SRC/tests" "$SRC/.ci" 2> /dev/null &&
			! { grep -qE '^[^#]*exec tests/vm/' "$SRC/$script" && [ "$script" = tools/demo.sh ]; }; then
			fail "$where: '$cmd': no test runs $script"
		fi
		;;
	*) fail "$where: '$cmd': no rule says which test runs it" ;;
	esac
done <<< "$list"
[ "$n" -ge 10 ] || fail "only $n commands found"
[ $bad = 0 ] && echo "PASS: the $n commands of the documentation are run by tests"
exit $bad
