#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# meson install into a DESTDIR puts every piece where Debian expects it,
# the unit passes systemd-analyze, the catalog indexes.
set -u
BUILD=${BUILD:?set by meson}
D=$(mktemp -d /tmp/execguard-install-XXXXXX)
trap 'rm -rf "$D"' EXIT
bad=0

meson install -C "$BUILD" --destdir "$D" --no-rebuild --quiet > "$D.log" 2>&1 ||
	{ cat "$D.log"; rm -f "$D.log"; echo "FAIL: meson install"; exit 1; }
rm -f "$D.log"
prefix=$(meson introspect "$BUILD" --buildoptions | python3 -c '
import json, sys
o = {x["name"]: x["value"] for x in json.load(sys.stdin)}
print(o["prefix"], o["sbindir"], o["bindir"], o["sysconfdir"], o["mandir"], o["datadir"],
      o["bashcompletiondir"] or "-", o["zshcompletiondir"] or "-")')
read -r P SBIN BIN ETC MAN DATA BASHCOMP ZSHCOMP <<< "$prefix"
abs() { case "$1" in /*) echo "$1" ;; *) echo "$P/$1" ;; esac; }
want=(
	"$(abs "$SBIN")/execguardd"
	"$(abs "$BIN")/execguardctl"
	"$(abs "$ETC")/execguard.conf"
	"$(abs "$DATA")/dbus-1/system.d/org.execguard.Manager1.conf"
	"$P/lib/systemd/catalog/execguard.catalog"
	"$P/lib/execguard.d/10-recovery.conf"
	"$(abs "$DATA")/containers/oci/hooks.d/execguard.json"
)
# Completions: where the options say, else the defaults (bash-completion's
# completionsdir under our datadir, DATADIR/zsh/site-functions).
[ "$BASHCOMP" != - ] || BASHCOMP=$(abs "$DATA")/bash-completion/completions
[ "$ZSHCOMP" != - ] || ZSHCOMP=$(abs "$DATA")/zsh/site-functions
want+=("$(abs "$BASHCOMP")/execguardctl" "$(abs "$BASHCOMP")/execguardd"
	"$(abs "$ZSHCOMP")/_execguardctl" "$(abs "$ZSHCOMP")/_execguardd")
if command -v scdoc > /dev/null; then
	want+=("$(abs "$MAN")/man8/execguardd.8" "$(abs "$MAN")/man1/execguardctl.1"
	       "$(abs "$MAN")/man5/execguard.conf.5" "$(abs "$MAN")/man8/execguard-oci-hook.8")
fi
for f in "${want[@]}"; do
	[ -e "$D$f" ] || { echo "FAIL: $f not installed"; bad=1; }
done
# The hook's definition names the installed hook, and parses.
hook_json=$D$(abs "$DATA")/containers/oci/hooks.d/execguard.json
if [ -e "$hook_json" ]; then
	hook=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["hook"]["path"])' "$hook_json") ||
		{ echo "FAIL: hooks.d/execguard.json does not parse"; bad=1; }
	[ -x "$D$hook" ] || { echo "FAIL: hooks.d/execguard.json names $hook, not installed"; bad=1; }
fi
[ -d "$D$(abs "$ETC")/execguard.d" ] || { echo "FAIL: execguard.d not created"; bad=1; }
unit=$(find "$D" -name execguardd.service | head -n 1)
[ -n "$unit" ] || { echo "FAIL: execguardd.service not installed"; bad=1; }
if [ -n "$unit" ]; then
	echo "unit: ${unit#$D}"
	grep -q "^ExecStart=$(abs "$SBIN")/execguardd\$" "$unit" || { echo "FAIL: ExecStart= wrong"; bad=1; }
	# systemctl reload fails on a policy with errors: checked before SIGHUP.
	[ "$(grep '^ExecReload=' "$unit")" = "ExecReload=$(abs "$SBIN")/execguardd --check-config
ExecReload=/bin/kill -HUP \$MAINPID" ] || { echo "FAIL: ExecReload= does not check the policy first: $(grep '^ExecReload=' "$unit")"; bad=1; }
	if command -v systemd-analyze > /dev/null; then
		systemd-analyze security --offline=yes "$unit" 2>/dev/null | tail -n 1
		# verify: only the binary and the man pages may be missing (not installed on /).
		out=$(systemd-analyze verify "$unit" 2>&1 | grep -v "is not executable\|Command 'man ")
		[ -z "$out" ] || { echo "FAIL: systemd-analyze verify: $out"; bad=1; }
	fi
fi
# The metrics service and timer, beside execguardd's unit.
for u in execguard-metrics.service execguard-metrics.timer; do
	[ -n "$unit" ] && [ -f "$(dirname "$unit")/$u" ] || { echo "FAIL: $u not installed beside execguardd.service"; bad=1; }
done
metrics=$(dirname "${unit:-/nonexistent}")/execguard-metrics.service
if [ -f "$metrics" ]; then
	grep -q "^ExecStart=$(abs "$BIN")/execguardctl .*metrics --output=/var/lib/prometheus/node-exporter/execguard.prom\$" "$metrics" ||
		{ echo "FAIL: execguard-metrics.service ExecStart= wrong"; bad=1; }
	if command -v systemd-analyze > /dev/null; then
		out=$(systemd-analyze verify "$metrics" "$(dirname "$metrics")/execguard-metrics.timer" 2>&1 |
			grep -v "is not executable\|Command 'man ")
		[ -z "$out" ] || { echo "FAIL: systemd-analyze verify (metrics): $out"; bad=1; }
	fi
fi
if command -v journalctl > /dev/null; then
	journalctl --root="$D" --update-catalog 2> /dev/null
	n=$(journalctl --root="$D" --list-catalog 2> /dev/null | grep -c " execguard: ")
	[ "$n" -ge 10 ] || { echo "FAIL: catalog indexes $n entries"; bad=1; }
fi
[ $bad = 0 ] && echo "PASS: installed to $P (DESTDIR), unit verified, catalog indexed"
exit $bad
