#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Without access to /proc/PID/map_files (no CAP_CHECKPOINT_RESTORE or
# CAP_SYS_ADMIN) files are opened by path and used only when device and
# inode are the mapping's. After a library is replaced on disk, a process
# still mapping the old one cannot have it locked that way: the file now
# at the path is a different inode and is not locked instead. This is
# reported once, not at every later look nor for every process.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup
command -v setpriv >/dev/null || skip "needs setpriv (util-linux) to drop capabilities"

lk_lib big 256
lk_prog prog big
lk_evict "$F/prog" "$F/libbig.so"
lk_run P "$F/prog" 32
lk_run P2 "$F/prog" 8

REAL_DRIVER=$LOCK_DRIVER
cat >"$W/driver-noaccess" <<SH
#!/bin/sh
exec setpriv --bounding-set=-sys_admin,-checkpoint_restore --inh-caps=-sys_admin,-checkpoint_restore "$REAL_DRIVER" "\$@"
SH
chmod +x "$W/driver-noaccess"
LOCK_DRIVER=$W/driver-noaccess
lk_driver
[ -r "/proc/$P/map_files" ] && setpriv --bounding-set=-sys_admin,-checkpoint_restore \
	cat "/proc/$P/map_files/$(awk '/libbig/ { print $1; exit }' "/proc/$P/maps")" >/dev/null 2>&1 &&
	skip "map_files still opens without CAP_SYS_ADMIN/CAP_CHECKPOINT_RESTORE here"

lk_cmd protect "$P" svc.service
lk_dump
old_ino=$(stat -c %i "$F/libbig.so")
l=$(file_line "$F/libbig.so" "$old_ino")
[ "$(field "$l" state)" = open ] && [ "$(field "$l" locked)" -gt 0 ] &&
	pass "opened by path with matching inode and locked ($(field "$l" locked))" || fail_later "path route: '$l'"

# Upgrade the library; drop our hold on the old inode so that it must be
# opened again, from a process that maps it as deleted.
cc -O1 -shared -fPIC -o "$F/libbig.so.new" "$W/libbig.c" -DUPGRADED=1 || fail cc
mv -f "$F/libbig.so.new" "$F/libbig.so"
new_ino=$(stat -c %i "$F/libbig.so")
lk_cmd release "$P"
lk_cmd protect "$P" svc.service
lk_cmd protect "$P2" svc.service
for _ in 1 2 3; do lk_cmd rescan; lk_cmd recheck; done
lk_dump
l=$(file_line "$F/libbig.so" "$old_ino")
[ "$(field "$l" state)" = failed ] && [ "$(field "$l" locked)" = 0 ] && [ "$(field "$l" pids)" = 2 ] &&
	pass "the old inode is reported failed, not locked" || fail_later "old inode: '$l'"
[ -z "$(file_line "$F/libbig.so" "$new_ino")" ] && pass "the new file at the path is not locked instead" ||
	fail_later "new inode locked for processes that do not map it: $(file_line "$F/libbig.so" "$new_ino")"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "total $(total locked) VmLck $(dump_vmlck)"
n=$(count_events LOCK_SKIPPED EXECGUARD_EXE="'$F/libbig.so'")
[ "$n" = 1 ] && pass "reported once over 2 processes and 3 rescans" || fail_later "reported $n times"

# All gone and back: still not reported again (until a reload).
lk_cmd release "$P"
lk_cmd release "$P2"
lk_cmd protect "$P" svc.service
lk_cmd rescan
[ "$(count_events LOCK_SKIPPED EXECGUARD_EXE="'$F/libbig.so'")" = 1 ] || fail_later "reported again after the range came back"
lk_finish
