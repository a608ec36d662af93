#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The man pages and the catalog cannot drift from the code: every option
# --help prints, every policy key the parser accepts, every D-Bus member
# and every MESSAGE_ID must be in them.
set -u
SRC=${SRC:?set by meson}
EXECGUARDD=${EXECGUARDD:?set by meson}
EXECGUARDCTL=${EXECGUARDCTL:?set by meson}
bad=0

miss() { echo "FAIL: $1 does not mention $2"; bad=1; }

# --help options: "--name" and short "-x" forms.
check_options() {
	local page="$SRC/man/$1" help="$2" o
	for o in $(echo "$help" | grep -oE '(^|[ ,])--[a-z][a-z-]+' | tr -d ' ,' | sort -u); do
		grep -qF -- "*$o*" "$page" || miss "$1" "option $o"
	done
	for o in $(echo "$help" | grep -oE '^ +-[a-zA-Z] ' | tr -d ' ' | sort -u); do
		grep -qF -- "*$o*" "$page" || miss "$1" "option $o"
	done
}
check_options execguardd.8.scd "$("$EXECGUARDD" --help)"
check_options execguardctl.1.scd "$("$EXECGUARDCTL" --help)"
check_options execguard-oci-hook.8.scd "$("${EXECGUARD_OCI_HOOK:?set by meson}" --help)"
# Every command of --help: in SYNOPSIS, as an entry of COMMANDS (a line
# of its own starting with it), and in the error for a missing command.
section() { sed -n "/^# $2\$/,/^# /p" "$SRC/man/$1"; }
needed=$("$EXECGUARDCTL" 2>&1 >/dev/null)
for c in $("$EXECGUARDCTL" --help | sed -n '/^Commands:/,/^$/p' | grep -oE '^  [a-z-]+' | tr -d ' '); do
	section execguardctl.1.scd SYNOPSIS | grep -q "^\*execguardctl\* .*\*$c\*" || miss "execguardctl.1.scd SYNOPSIS" "command $c"
	section execguardctl.1.scd COMMANDS | grep -q "^\*$c\*" || miss "execguardctl.1.scd COMMANDS" "command $c"
	grep -qE "(: |, | or )$c( PID)?(,| or | \(see)" <<<"$needed" || miss "execguardctl's \"a command is needed\" error ($needed)" "command $c"
done

# Backslashes survive scdoc and roff: a lone \x in a source is eaten
# ("\xNN" rendered as "xNN"); what the pages show is checked rendered.
if grep -nE '(^|[^\\])\\x' "$SRC"/man/*.scd; then
	echo "FAIL: a single backslash before x in a man page source: scdoc drops it (write \\\\x)"
	bad=1
fi
if command -v scdoc > /dev/null && command -v nroff > /dev/null; then
	render() { scdoc < "$SRC/man/$1" | nroff -man -rLL=200n 2>/dev/null | col -b; }
	for want in 'execguardctl.1.scd:\xNN' 'execguardctl.1.scd:\x2d' 'execguard.conf.5.scd:app\x2dweb.service'; do
		render "${want%%:*}" | grep -qF -- "${want#*:}" || miss "${want%%:*} as rendered" "${want#*:}"
	done
else
	echo "FAIL: scdoc or nroff missing (tools/deps.sh build: scdoc, groff-base)"
	bad=1
fi

# Policy keys: what the parser's own table accepts (execguardctl keys).
keys=$("$EXECGUARDCTL" --json keys) || { echo "FAIL: execguardctl keys"; bad=1; }
[ "$(python3 -c 'import json, sys; print(len(json.load(sys.stdin)))' <<<"$keys")" -ge 10 ] ||
	{ echo "FAIL: execguardctl keys lists too few keys: $keys"; bad=1; }
for k in $(python3 -c 'import json, sys; print(" ".join(sorted({k["key"] for k in json.load(sys.stdin)})))' <<<"$keys"); do
	grep -qF -- "*$k=*" "$SRC/man/execguard.conf.5.scd" || miss execguard.conf.5.scd "key $k="
done
for s in '[Daemon]' '[Rule NAME]' '[X-ExecGuard]'; do
	grep -qF -- "$s" "$SRC/man/execguard.conf.5.scd" || miss execguard.conf.5.scd "section $s"
done

# D-Bus members in execguardd(8).
for m in $(grep -oE 'SD_BUS_(PROPERTY|METHOD_WITH_NAMES)\("[A-Za-z]+"|PROP\("[A-Za-z]+"' "$SRC/daemon/bus.c" "$SRC/daemon/bus-containers.c" | grep -ohE '"[A-Za-z]+"' | tr -d '"' | sort -u); do
	grep -qF -- "*$m*" "$SRC/man/execguardd.8.scd" || miss execguardd.8.scd "D-Bus member $m"
done

# Every MESSAGE_ID defined in the daemon has a catalog entry.
for id in $(grep -ohE '#define MID_[A-Z_]+ "[0-9a-f]{32}"' "$SRC"/daemon/*.[ch] | grep -oE '[0-9a-f]{32}' | sort -u); do
	grep -q -- "^-- $id\$" "$SRC/catalog/execguard.catalog" || miss execguard.catalog "MESSAGE_ID $id"
done

# The policy examples (the containers example among them, against
# conf/examples/containers.conf): tests/test-doc-examples.sh.

# One version: VERSION (meson's project version) is debian/changelog's,
# and the programs say it.
v=$(cat "$SRC/VERSION")
[ "$v" = "$(dpkg-parsechangelog -l "$SRC/debian/changelog" -S Version 2>/dev/null || sed -n '1s/.*(\(.*\)).*/\1/p' "$SRC/debian/changelog")" ] ||
	{ echo "FAIL: VERSION ($v) is not debian/changelog's version"; bad=1; }
[ "$("$EXECGUARDCTL" --version)" = "execguardctl $v" ] || { echo "FAIL: execguardctl --version: $("$EXECGUARDCTL" --version), want $v"; bad=1; }
[ "$("$EXECGUARDD" --version)" = "execguardd $v" ] || { echo "FAIL: execguardd --version: $("$EXECGUARDD" --version), want $v"; bad=1; }

[ $bad = 0 ] && echo "PASS: man pages and catalog cover the options, keys, bus members and message ids"
exit $bad
