#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Checking a policy without the daemon, as an administrator would:
# execguardctl check-config (text and --json, every document read by a
# JSON parser) and execguardd --check-config agree on good files, bad
# ones, warnings and a missing file; keys --json parses.
set -u
EXECGUARDD=${EXECGUARDD:?set by meson}
EXECGUARDCTL=${EXECGUARDCTL:?set by meson}
T=$(mktemp -d /tmp/execguard-check-XXXXXX)
trap 'rm -rf "$T"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }
# json FILE PYTHON: parse FILE with Python's json module (strict: UTF-8,
# no trailing garbage), then run the check with the document as d.
json() {
	python3 -c '
import json, sys
d = json.loads(open(sys.argv[1], "rb").read().decode("utf-8"))
exec(sys.argv[2])' "$1" "$2"
}
mkdir -p "$T/etc/execguard.d" "$T/units"
conf=$T/etc/execguard.conf
printf '[Service]\nExecStart=/bin/true\n# [X-ExecGuard] in a comment\n[X-ExecGuard]\nProtect=yes # inline\n' > "$T/units/a.service"

# A good policy, with inline comments.
cat > "$conf" <<'CONF'
[Daemon]
Backend=none            # observe only
[Rule web]              # a rule
MatchUnit=nginx.service *.web.service     # globs, space separated
Protect=yes
CONF
"$EXECGUARDCTL" --json check-config -c "$conf" "$T/units/a.service" > "$T/out.json" 2> "$T/err" ||
	fail "check-config --json of a good policy: exit $?: $(cat "$T/err")"
python3 -m json.tool "$T/out.json" > /dev/null || fail "check-config --json is not JSON: $(cat "$T/out.json")"
json "$T/out.json" '
assert d["ok"] is True and d["rules"] == 1 and d["backend"] == "none", d
assert d["errors"] == [] and d["warnings"] == [] and d["masked_files"] == [], d
assert len(d["policy_files"]) == 1 and d["policy_files"][0].endswith("/etc/execguard.conf"), d
assert len(d["unit_files"]) == 1, d' || fail "check-config --json content: $(cat "$T/out.json")"
"$EXECGUARDCTL" check-config -c "$conf" "$T/units/a.service" > "$T/out" 2>&1 || fail "check-config: $(cat "$T/out")"
grep -q '^policy OK: 1 rule from 1 file, Backend=none; 1 unit file with \[X-ExecGuard\] OK$' "$T/out" ||
	fail "check-config text: $(cat "$T/out")"
"$EXECGUARDD" -c "$conf" --check-config > "$T/out" 2>&1 || fail "execguardd --check-config: $(cat "$T/out")"
grep -q '^policy OK: 1 rule from 1 file, Backend=none$' "$T/out" || fail "execguardd --check-config: $(cat "$T/out")"

# Errors and warnings: file:line in text, objects in JSON; a name that is
# not UTF-8 is refused and the document stays UTF-8.
printf '[Daemon]\nBackend=fast\n[Rule caf\xe9]\nProtect=yes\n' > "$T/etc/execguard.d/50-bad.conf"
printf '[Rule all]\nProtect=yes\n' > "$T/etc/execguard.d/60-all.conf"
: > "$T/etc/execguard.d/70-empty.conf"
"$EXECGUARDCTL" --json check-config -c "$conf" "$T/units/a.service" > "$T/out.json" 2> "$T/err"
rc=$?
[ $rc = 1 ] || fail "check-config --json of a bad policy: exit $rc, want 1"
json "$T/out.json" '
assert d["ok"] is False, d
errs = {(e["file"].rsplit("/", 1)[1], e["line"]): e["message"] for e in d["errors"]}
warns = {(w["file"].rsplit("/", 1)[1], w["line"]): w["message"] for w in d["warnings"]}
assert errs[("50-bad.conf", 2)].startswith("invalid Backend=fast"), errs
assert "not valid UTF-8 (byte \\xe9" in errs[("50-bad.conf", 3)], errs
assert "has no MatchUnit=" in warns[("60-all.conf", 1)], warns
assert warns[("70-empty.conf", None)] == "empty file: it sets nothing", warns' ||
	fail "check-config --json with errors: $(cat "$T/out.json")"
"$EXECGUARDCTL" check-config -c "$conf" "$T/units/a.service" > "$T/out" 2> "$T/err"
[ $? = 1 ] || fail "check-config of a bad policy must exit 1"
grep -q "^$T/etc/execguard.d/50-bad.conf:2: invalid Backend=fast" "$T/err" || fail "no file:line: $(cat "$T/err")"
grep -q "^$T/etc/execguard.d/60-all.conf:1: warning: \[Rule all\] has no MatchUnit=" "$T/err" || fail "no warning: $(cat "$T/err")"
grep -q "^$T/etc/execguard.d/70-empty.conf: warning: empty file" "$T/err" || fail "no empty-file warning: $(cat "$T/err")"
"$EXECGUARDD" -c "$conf" --check-config > "$T/out" 2>&1
[ $? = 1 ] || fail "execguardd --check-config of a bad policy must exit 1"
grep -q "60-all.conf:1: warning: \[Rule all\] has no MatchUnit=" "$T/out" || fail "execguardd: no warning: $(cat "$T/out")"
rm "$T/etc/execguard.d/50-bad.conf"
# Warnings alone: accepted, exit 0.
"$EXECGUARDCTL" check-config -c "$conf" "$T/units/a.service" > "$T/out" 2> "$T/err" ||
	fail "warnings alone must not fail check-config: $(cat "$T/err")"
"$EXECGUARDD" -c "$conf" --check-config > "$T/out" 2>&1 || fail "warnings alone must not fail execguardd --check-config"
rm "$T/etc/execguard.d/"*.conf

# A file that is named and missing: both say so and exit 1.
"$EXECGUARDCTL" check-config -c "$T/missing.conf" "$T/units/a.service" > "$T/out" 2>&1
[ $? = 1 ] || fail "check-config of a missing file must exit 1"
grep -q "^$T/missing.conf: cannot open: No such file or directory" "$T/out" || fail "check-config, missing: $(cat "$T/out")"
"$EXECGUARDD" -c "$T/missing.conf" --check-config > "$T/out" 2>&1
[ $? = 1 ] || fail "execguardd --check-config of a missing file must exit 1"
grep -q "^$T/missing.conf: cannot open: No such file or directory" "$T/out" || fail "execguardd, missing: $(cat "$T/out")"
"$EXECGUARDCTL" --json check-config -c "$T/missing.conf" "$T/units/a.service" > "$T/out.json"
json "$T/out.json" 'assert d["ok"] is False and d["errors"][0]["line"] is None, d' || fail "missing, --json: $(cat "$T/out.json")"

# A unit file named without a section: a warning, not silence.
printf '[Service]\nExecStart=/bin/true\n' > "$T/units/b.service"
"$EXECGUARDCTL" check-config -c "$conf" "$T/units/b.service" > "$T/out" 2> "$T/err" || fail "b.service: $(cat "$T/err")"
grep -q "^$T/units/b.service: warning: no \[X-ExecGuard\] section" "$T/err" || fail "b.service: $(cat "$T/err")"

# keys --json: the parser's table, as JSON.
"$EXECGUARDCTL" --json keys > "$T/keys.json" || fail "keys --json"
json "$T/keys.json" 'assert len(d) >= 10 and all(set(k) == {"section", "key", "help"} for k in d), d' ||
	fail "keys --json: $(head -c 300 "$T/keys.json")"

[ $bad = 0 ] && echo "PASS: check-config and --check-config agree; every --json document parses"
exit $bad
