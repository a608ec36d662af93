#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# A mapped library and program replaced on disk (new inode, as a package
# upgrade does): the old inode stays locked while a process maps it
# (reached through /proc/PID/map_files, its path is gone); a process
# started afterwards gets the new inode locked; when the old process
# exits the old inode is released. A process of the old version protected
# only after the upgrade still gets the old inode (not the file now at its
# path). No error, no mapping or fd left over. (LockKeepSec=0: nothing is
# kept after an exit.)
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup

lk_lib big 1024
lk_prog prog big
lk_evict "$F/prog" "$F/libbig.so"
lk_run OLD "$F/prog" 40
lk_run LATE "$F/prog" 8
lk_conf "$W/conf" LockKeepSec=0
lk_driver "$W/conf"
lk_cmd protect "$OLD" svc.service
lk_dump
old_ino=$(stat -c %i "$F/libbig.so")
old_locked=$(field "$(file_line "$F/libbig.so" "$old_ino")" locked)
[ "${old_locked:-0}" -gt 0 ] || fail "old library not locked: $(cat "$W/dump")"
fds_before=$(ls "/proc/$DRV_PID/fd" | wc -l)

# Upgrade: new files written beside and renamed over the old ones.
cc -O1 -shared -fPIC -o "$F/libbig.so.new" "$W/libbig.c" -DUPGRADED=1 || fail cc
cp "$F/prog" "$F/prog.new"
mv -f "$F/libbig.so.new" "$F/libbig.so"
mv -f "$F/prog.new" "$F/prog"
new_ino=$(stat -c %i "$F/libbig.so")
[ "$new_ino" != "$old_ino" ] || fail "rename kept the inode"
lk_evict "$F/prog" "$F/libbig.so"
lk_run NEW "$F/prog" 24

# The old inode must be opened anew (no one holds it), from a process that
# maps it as "(deleted)": only map_files reaches it.
lk_cmd release "$OLD"
lk_dump
[ -z "$(file_line "$F/libbig.so" "$old_ino")" ] || fail_later "old inode kept after release"
lk_cmd protect "$LATE" late.service
lk_cmd protect "$OLD" svc.service
lk_cmd protect "$NEW" svc.service
lk_cmd rescan
lk_cmd recheck
lk_dump
lo=$(file_line "$F/libbig.so" "$old_ino"); ln=$(file_line "$F/libbig.so" "$new_ino")
[ "$(field "$lo" locked)" -ge "$old_locked" ] && [ "$(field "$lo" state)" = open ] &&
	pass "old inode locked again ($(field "$lo" locked)) through map_files" || fail_later "old inode: '$lo'"
[ "$(field "$lo" pids)" = 2 ] && [ "$(field "$lo" units)" = 2 ] &&
	pass "old-version process protected after the upgrade maps the old inode" || fail_later "late: '$lo'"
[ "$(field "$ln" pids)" = 1 ] || fail_later "new inode should be mapped by 1 process: '$ln'"
res=$(used_of "$NEW" "$F/libbig.so")
d=$(( $(field "$ln" locked) - res )); d=${d#-}
[ "$(field "$ln" locked)" -gt 0 ] && [ "$d" -le $(( $(field "$ln" ranges) * PAGE)) ] &&
	pass "new inode locked ($(field "$ln" locked), used $res)" || fail_later "new inode: '$ln' used $res"

lk_stop "$OLD"
lk_stop "$LATE"
old_gone() { [ -z "$(file_line "$F/libbig.so" "$old_ino")" ]; }
lk_dump_until 5 old_gone
[ -z "$(file_line "$F/libbig.so" "$old_ino")" ] && [ -n "$(file_line "$F/libbig.so" "$new_ino")" ] &&
	pass "old inode released at the old process's exit, new one kept" || fail_later "after exit: $(grep '^file ' "$W/dump")"
[ "$(total locked)" = "$(dump_vmlck)" ] && pass "VmLck $(dump_vmlck) = what is locked" ||
	fail_later "total $(total locked) VmLck $(dump_vmlck)"
grep -q "(deleted)" "/proc/$DRV_PID/maps" && fail_later "the daemon still maps a deleted file: $(grep deleted "/proc/$DRV_PID/maps")"
fds_after=$(ls "/proc/$DRV_PID/fd" | wc -l)
[ "$fds_after" -le "$fds_before" ] && pass "no fd leaked ($fds_before -> $fds_after)" ||
	fail_later "fds $fds_before -> $fds_after"
problems && fail_later "errors reported"
lk_stop "$NEW"
no_ranges() { [ "$(total ranges)" = 0 ]; }
lk_dump_until 5 no_ranges
[ "$(total ranges)" = 0 ] && [ "$(dump_vmlck)" = 0 ] || fail_later "left: ranges=$(total ranges) VmLck=$(dump_vmlck)"
lk_finish
