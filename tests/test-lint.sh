#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# What review found more than once and a compiler does not: an sd-event
# source armed or switched with its result dropped (a daemon whose timer
# cannot fire goes deaf without a word: daemon/event-util.h checks it),
# hash map drains that start over at bucket 0 after each removal,
# strerror().
set -u
SRC=${SRC:?set by meson}
bad=0

# sd_event_source_set_enabled/time/time_relative/priority with the result
# unused: at the start of a statement, bare or cast to (void).
# (Descriptions only name a source for sd-event's debug logs.)
hits=$(grep -nE '^[[:space:]]*(\(void\) ?)?sd_event_source_set_(enabled|time|time_relative|priority)\(' \
	"$SRC"/daemon/*.c | grep -v '^.*/event-util\.c:')
if [ -n "$hits" ]; then
	echo "FAIL: sd-event source armed or switched without checking the result (use event-util.h):"
	echo "$hits"
	bad=1
fi

# A drain of a hash map that starts over at bucket 0 after each removal
# (hashmap_next(m, &i, NULL) with i = 0): quadratic in the entries. Use
# hashmap_steal() or hashmap_iter_next() (hashmap.h).
hits=$(grep -nE 'hashmap_next\([^;]*, *NULL\)' "$SRC"/daemon/*.c)
if [ -n "$hits" ]; then
	echo "FAIL: a hash map drained from bucket 0 again after each removal (hashmap_steal/hashmap_iter_next):"
	echo "$hits"
	bad=1
fi

# strerror() is not thread-safe (libsystemd and glibc may call it too):
# log with %m (log_*_errno()), or STRERROR() (util.h) for other text.
hits=$(grep -nE '(^|[^A-Za-z_])strerror\(' "$SRC"/daemon/*.c)
if [ -n "$hits" ]; then
	echo "FAIL: strerror() (log with %m, or use STRERROR()):"
	echo "$hits"
	bad=1
fi

[ $bad = 0 ] && echo "PASS: no unchecked sd-event arming, no quadratic drain, no strerror()"
exit $bad
