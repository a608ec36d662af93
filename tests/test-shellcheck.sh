#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Runs shellcheck -S warning over every shell script of the tree: no test ran
# it, and a refactor that dropped a variable's assignment (SC2154,
# referenced but not assigned) killed every run of bench/real/inside.sh
# under set -u. The scripts are the tracked *.sh files and the tracked
# files whose first line is a sh or bash shebang (.ci/run, debian's
# maintainer scripts...), not the fuzz corpus. A finding that cannot be
# fixed in place yet is listed, with its reason, in
# tests/shellcheck-known.txt ("path:SCcode  # reason"); a false positive
# is silenced on its line with "# shellcheck disable=SCxxxx # reason",
# never for a whole file or class (--norc: no .shellcheckrc either).
set -u
SRC=${SRC:?set by meson}
KNOWN=${SHELLCHECK_KNOWN:-$SRC/tests/shellcheck-known.txt}

if ! command -v shellcheck >/dev/null; then
	echo "SKIP: shellcheck is not installed (tools/deps.sh test installs it): shell scripts not checked"
	exit 77
fi
cd "$SRC" || exit 1

# Every file of the tree, NUL-separated, relative to $SRC: git's list
# where this is a clone, else a walk that leaves out .git and build
# directories (meson's, with a build.ninja; /build*, /obj-*).
list_files() {
	if [ -e .git ] && git ls-files -z 2>/dev/null; then
		return 0
	fi
	local prune=(-name .git -o -path './build*' -o -path './obj-*') d
	while IFS= read -r d; do
		prune+=(-o -path "$d")
	done < <(find . -name build.ninja -printf '%h\n' 2>/dev/null)
	find . \( "${prune[@]}" \) -prune -o -type f -printf '%P\0'
}

scripts=()
shebang='^#!(/usr)?/bin/(env )?(ba)?sh([[:space:]]|$)'
while IFS= read -r -d '' f; do
	case $f in
	tests/fuzz/corpus/*) continue ;;
	*.sh) [ -f "$f" ] && scripts+=("$f") ;;
	*)
		if [ ! -f "$f" ] || [ -L "$f" ]; then continue; fi
		first=
		IFS= read -r first <"$f" 2>/dev/null
		[[ $first =~ $shebang ]] && scripts+=("$f")
		;;
	esac
done < <(list_files)
if [ ${#scripts[@]} -eq 0 ]; then
	echo "FAIL: no shell script found under $SRC"
	exit 1
fi

# The allowlist: "path:SCcode", a "#" comment after it (the reason).
declare -A known=() used=()
if [ -f "$KNOWN" ]; then
	while IFS= read -r line; do
		line=${line%%#*}
		read -r entry _ <<<"$line"
		[ -n "$entry" ] || continue
		if [[ ! $entry =~ ^[^:]+:SC[0-9]+$ ]]; then
			echo "FAIL: $KNOWN: not path:SCcode: $entry"
			exit 1
		fi
		known[$entry]=1
	done <"$KNOWN"
fi

out=$(shellcheck --norc -S warning -f gcc -- "${scripts[@]}" 2>&1)
rc=$?
# 0: no finding, 1: findings; anything else: shellcheck itself failed.
if [ $rc -gt 1 ]; then
	echo "FAIL: shellcheck exited $rc:"
	echo "$out"
	exit 1
fi

bad=0 allowed=0
while IFS= read -r l; do
	[ -n "$l" ] || continue
	path=${l%%:*}
	code=
	[[ $l =~ \[(SC[0-9]+)\]$ ]] && code=${BASH_REMATCH[1]}
	if [ -n "$code" ] && [ -n "${known[$path:$code]:-}" ]; then
		echo "known: $l"
		used[$path:$code]=1
		allowed=$((allowed + 1))
	else
		echo "$l"
		bad=$((bad + 1))
	fi
done <<<"$out"
for entry in "${!known[@]}"; do
	[ -n "${used[$entry]:-}" ] ||
		echo "note: $entry in ${KNOWN#"$SRC"/} matches no finding any more: remove it"
done

if [ $bad -gt 0 ]; then
	echo "FAIL: $bad shellcheck finding(s) in ${#scripts[@]} scripts: fix them, or silence a false positive on its line with '# shellcheck disable=SCxxxx # why'"
	exit 1
fi
echo "PASS: shellcheck -S warning clean over ${#scripts[@]} scripts ($allowed known finding(s) listed in ${KNOWN#"$SRC"/})"
exit 0
