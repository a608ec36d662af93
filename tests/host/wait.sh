# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Scaled waits, shared by lib.sh and lock/lib.sh.
# Every wait for something that must happen is bounded by SECONDS times
# WAIT_SCALE (default 4): a wait returns as soon as the thing happens, so
# a larger bound costs nothing when it works and keeps a slow or loaded
# machine from failing a test that only waited too little. Tests assert
# what happened, never how fast.
WAIT_SCALE=${WAIT_SCALE:-4}
wait_secs() { echo $(($1 * WAIT_SCALE)); }

# wait_until SECONDS CMD...: run CMD every 50 ms until it succeeds; 1 if
# it never did within the (scaled) bound.
wait_until() {
	local secs deadline
	secs=$(wait_secs "$1")
	shift
	deadline=$((SECONDS + secs))
	while :; do
		"$@" && return 0
		[ "$SECONDS" -ge "$deadline" ] && break
		sleep 0.05
	done
	"$@"
}

