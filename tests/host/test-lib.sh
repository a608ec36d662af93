#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The host tests' library cleans up only in the test's own shell: a child
# forked for "cmd &" and killed before it execs runs bash's inherited
# EXIT trap, and must not take the test's processes and files with it.
# Needs no privilege.
. "$(dirname "$0")/lib.sh"
test_init

sleep 60 &
keep=$!
KIDS+=("$keep")
touch "$T/marker"
for _ in $(seq 200); do
	sh -c 'exec true' &
	kill "$!" 2> /dev/null
	wait "$!" 2> /dev/null
done
kill -0 "$keep" 2> /dev/null || fail "a killed child's exit trap killed the test's process $keep"
[ -e "$T/marker" ] || fail "a killed child's exit trap removed the test's directory"
pass "200 children killed before exec: the test's process and directory kept"
