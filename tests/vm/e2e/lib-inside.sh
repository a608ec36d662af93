# shellcheck shell=bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shared by the scripts that run inside the VM under systemd (inside.sh,
# inside-lock.sh): the report ("E2E: " lines), checks and waits.
# Set before sourcing: slow (waits are this many times longer; 1).
slow=${slow:-1}
failed=0
say() { echo "E2E: $*"; }
ok() { say "PASS: $*"; }
bad() { say "FAIL: $*"; failed=$((failed + 1)); }
check() { local what=$1; shift; if "$@"; then ok "$what"; else bad "$what"; fi; }
wait_for() { # SECONDS CMD...: until CMD succeeds, by the clock (CMD may be slow)
	local deadline=$((SECONDS + $1 * slow)); shift
	until "$@"; do
		[ "$SECONDS" -ge "$deadline" ] && return 1
		sleep 0.1
	done
}
# journal_has MESSAGE_ID [FIELD=VALUE...]: an entry of execguardd's with them
journal_has() {
	journalctl -u execguardd -o json --no-pager | python3 -c '
import json, sys
want = dict(a.split("=", 1) for a in sys.argv[2:])
for line in sys.stdin:
    e = json.loads(line)
    if e.get("MESSAGE_ID") == sys.argv[1] and all(e.get(k) == v for k, v in want.items()):
        sys.exit(0)
sys.exit(1)' "$@"
}
finish() {
	if [ "$failed" -gt 0 ]; then
		say "journalctl -u execguardd (last 30 lines):"
		journalctl -u execguardd --no-pager -o short-monotonic 2>&1 | tail -n 30 | sed 's/^/E2E:   /'
	fi
	say "$failed failed"
	exit $((failed > 0))
}
