#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Names are bytes: a protected process whose unit (cgroup) name, its
# executable's path and a library's path hold bytes that are not UTF-8
# or control characters. sd-bus refuses such strings, so before the fix
# one such process made status, explain and libs fail for the whole
# machine. The daemon sends them escaped as \xNN; every method and every
# --json output works and stays valid UTF-8 JSON.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init

A=$'egtest-n-\xff\x01-'$$.service
esc_A="egtest-n-\\xff\\x01-$$.service"
unit_cgroup "$S" "$A"
write_conf <<CONF
[Daemon]
Backend=lock
LockRecheckSec=1
PressureWindowMSec=10000
PressureStallMSec=5000
[Rule names]
MatchUnit=egtest-n-*-$$.service
Protect=yes
CONF
start_daemon
has_event BACKEND EXECGUARD_BACKEND=lock || skip "lock backend not usable here: $(last_event BACKEND)"

# An executable and a library directory whose names are not UTF-8.
chmod 755 "$T"
bin=$T/$'sl\xfeep'
libdir=$T/$'lib\xe9\x28'
mkdir -p "$libdir"
cp /bin/sleep "$bin"
libc=$(ldd /bin/sleep | awk '/libc\.so/ { print $3 }')
[ -f "$libc" ] || fail "cannot find the libc sleep uses"
cp "$libc" "$libdir/"
LD_LIBRARY_PATH=$libdir run_in "$S/$A" "$bin" 600
p=$LAST_PID
wait_until 10 grep -q "$(basename "$libc")" "/proc/$p/maps" || fail "pid $p did not map its libc"
wait_event 10 PROCESS_PROTECTED EXECGUARD_PID="$p" || fail "pid $p not protected"

out=$(ctl status 2>&1) || fail "status failed: $out"
grep -qF "$esc_A" <<<"$out" || fail "status does not show $esc_A: $out"
out=$(ctl --json status 2>&1) || fail "status --json failed: $out"
python3 -c "
import json, sys
d = json.loads(sys.stdin.buffer.read().decode('utf-8'))
u = [x for x in d['units'] if x['unit'] == sys.argv[1]]
assert u and u[0]['protected'], d['units']
" "$esc_A" <<<"$out" || fail "status --json: no valid row for $esc_A: $out"
pass "status and status --json show the unit as $esc_A"

out=$(ctl explain "$p" 2>&1) || fail "explain failed: $out"
grep -qF 'sl\xfeep' <<<"$out" || fail "explain does not show the escaped executable: $out"
out=$(ctl --json explain "$p" 2>&1) || fail "explain --json failed: $out"
python3 -c "
import json, sys
d = json.loads(sys.stdin.buffer.read().decode('utf-8'))
assert d['exe'].endswith('/sl\\\\xfeep'), d
assert sys.argv[1] in d['unit'] + d['cgroup'], d
" "$esc_A" <<<"$out" || fail "explain --json: $out"
pass "explain and explain --json show the executable as sl\\xfeep"

esc_lib="lib\\xe9(/$(basename "$libc")"
libs_show() { ctl libs 2>&1 | grep -qF -- "$1"; }
wait_until 10 libs_show "$esc_lib" || fail "libs does not show $esc_lib: $(ctl libs 2>&1)"
out=$(ctl --json libs 2>&1) || fail "libs --json failed: $out"
python3 -c "
import json, sys
d = json.loads(sys.stdin.buffer.read().decode('utf-8'))
assert any(x['path'].endswith(sys.argv[1]) for x in d), d
" "$esc_lib" <<<"$out" || fail "libs --json: $out"
pass "libs and libs --json show the library as $esc_lib"
kill "$p"
stop_daemon || fail "daemon exit status $?"
