#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Bad policy: file:line errors and a non-zero exit, at start and with
# --check-config; files others can write are refused; the options
# behave as --help says.
. "$(dirname "$0")/lib.sh"
test_init

out=$("$EXECGUARDD" --help) || fail "--help failed"
for o in --config --dry-run --backend --check-config --cgroup-root --log-target --version; do
	grep -q -- "$o" <<<"$out" || fail "--help does not mention $o"
done
"$EXECGUARDD" --version | grep -Eq '^execguardd [0-9]+\.[0-9]+' || fail "--version"
"$EXECGUARDD" --no-such-option >/dev/null 2>&1
[ $? = 2 ] || fail "an unknown option must exit 2"
"$EXECGUARDD" --backend=fast >/dev/null 2>&1
[ $? = 2 ] || fail "a bad --backend must exit 2"

write_conf <<'CONF'
[Daemon]
Backend=kernel
Colour=blue
[Rule a]
Protect=perhaps
CONF
conf="$T/etc/execguard.conf"
"$EXECGUARDD" -c "$conf" --check-config > "$T/out" 2>&1
rc=$?
[ $rc = 1 ] || fail "--check-config of a bad file exited $rc"
grep -q "^$conf:3: unknown key Colour in \[Daemon\]" "$T/out" || fail "no file:line for line 3: $(cat "$T/out")"
grep -q "^$conf:5: invalid Protect=perhaps; expected yes, no or auto" "$T/out" || fail "no file:line for line 5"
pass "--check-config reports file:line"

"$EXECGUARDD" -c "$conf" --log-target=stderr > "$T/out" 2>&1
rc=$?
[ $rc = 1 ] || fail "start with a bad policy exited $rc"
grep -q "$conf:3: unknown key Colour" "$T/out" || fail "start did not name file:line"
grep -q "refusing to start" "$T/out" || fail "start did not say it refuses"
pass "start refuses a bad policy"

# A drop-in: named by its own path and line.
printf '[Daemon]\nBackend=auto\n' > "$conf"
printf '[Rule x]\nMatchCgroup=relative/path\n' > "$T/etc/execguard.d/10-x.conf"
chmod 644 "$T/etc/execguard.d/10-x.conf"
"$EXECGUARDD" -c "$conf" --check-config > "$T/out" 2>&1 && fail "bad drop-in accepted"
grep -q "$T/etc/execguard.d/10-x.conf:2: invalid MatchCgroup" "$T/out" || fail "drop-in error: $(cat "$T/out")"
rm "$T/etc/execguard.d/10-x.conf"

chmod 666 "$conf"
"$EXECGUARDD" -c "$conf" --check-config > "$T/out" 2>&1 && fail "world-writable config accepted"
grep -q "refused: writable by group or others" "$T/out" || fail "no reason for refusal: $(cat "$T/out")"
chmod 644 "$conf"
pass "a config others can write is refused"

"$EXECGUARDD" -c "$conf" --check-config > "$T/out" 2>&1 || fail "good config rejected: $(cat "$T/out")"
grep -q "policy OK: 0 rules from 1 file, Backend=auto" "$T/out" || fail "check output: $(cat "$T/out")"

# The shipped default policy is valid.
"$EXECGUARDD" -c "$(dirname "$0")/../../conf/execguard.conf" --check-config > "$T/out" 2>&1 ||
	fail "conf/execguard.conf: $(cat "$T/out")"
pass "good and shipped configs accepted"

# Without cgroup2 (a private mount namespace with every cgroup2 mount
# taken away): one clear error and exit 6 (systemd's NOTCONFIGURED), the
# status execguardd.service does not restart on.
if [ "$(id -u)" = 0 ] && command -v unshare > /dev/null; then
	printf '[Daemon]\nBackend=none\n' > "$conf"
	unshare -m --propagation private sh -c '
		for m in $(findmnt -n -t cgroup2 -o TARGET | sort -r); do umount -l "$m" || exit 99; done
		[ -z "$(findmnt -n -t cgroup2)" ] || exit 99
		exec "$0" -c "$1" --log-target=stderr' "$EXECGUARDD" "$conf" > "$T/out" 2>&1
	rc=$?
	[ $rc != 99 ] || fail "could not unmount cgroup2 in a private mount namespace"
	[ $rc = 6 ] || fail "without cgroup2: exit $rc, want 6: $(cat "$T/out")"
	[ "$(wc -l < "$T/out")" = 1 ] && grep -q "no cgroup2 file system is mounted" "$T/out" ||
		fail "without cgroup2, want one error line: $(cat "$T/out")"
	unit=$(dirname "$0")/../../units/execguardd.service.in
	grep -qx 'RestartPreventExitStatus=6' "$unit" || fail "execguardd.service restarts on exit 6"
	pass "without cgroup2: one error, exit 6, no restart"
fi
