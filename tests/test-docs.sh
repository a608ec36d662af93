#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The man pages and the catalog cannot drift from the code: every option
# --help prints, every policy key the parser accepts, every D-Bus member
# and every MESSAGE_ID must be in them; the man page's containers
# example is the tested drop-in.
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
for c in $("$EXECGUARDCTL" --help | sed -n '/^Commands:/,/^$/p' | grep -oE '^  [a-z-]+' | tr -d ' '); do
	grep -qF -- "*$c*" "$SRC/man/execguardctl.1.scd" || miss execguardctl.1.scd "command $c"
done

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

# The containers example in execguard.conf(5) is the tested drop-in
# (test-policy loads conf/examples/containers.conf): the same rules.
rules() { grep -v '^#' | grep -v '^$'; }
if ! diff <(rules < "$SRC/conf/examples/containers.conf") \
	<(sed -n '/^# \/etc\/execguard.d\/containers.conf/,/^```/p' "$SRC/man/execguard.conf.5.scd" | grep -v '^```' | rules) > /dev/null; then
	echo "FAIL: execguard.conf.5.scd's containers example differs from conf/examples/containers.conf"
	bad=1
fi

[ $bad = 0 ] && echo "PASS: man pages and catalog cover the options, keys, bus members and message ids"
exit $bad
