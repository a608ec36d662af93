#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The whole image, not only its text. A protected program uses a
# library's .rodata (the first half), relro and .data (all of them read,
# the first half of .data written: those pages are copied on write and
# become the program's anonymous memory), a data file it maps PROT_READ,
# and anonymous memory. Page by page, by an independent reading of the
# program's pagemap and of /proc/kpageflags:
# - every page of the library the program maps as the file's page is
#   mlocked, in every segment (.rodata, relro, .data), and the r-- head
#   with the dynamic symbols is locked too;
# - no page it does not map is: the unread .rodata, and the .data pages it
#   wrote (their file pages stay resident, but are no longer its);
# - the data file is neither locked nor in the lock set, no anonymous page
#   is mlocked, and the program's memory still holds what it wrote.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup
[ -r /proc/kpageflags ] || skip "no /proc/kpageflags to read page flags from"
cc -O2 -o "$W/pageflags" "$LK_DIR/pageflags.c" || fail "cannot build pageflags.c"
RO=64 RELRO=32 DATA=32
defs=("-DRO_PAGES=$RO" "-DRELRO_PAGES=$RELRO" "-DDATA_PAGES=$DATA")
cc -O1 -shared -fPIC -Wl,-z,relro -Wl,-z,now "${defs[@]}" -o "$F/libimg.so" "$LK_DIR/imglib.c" || fail "cc libimg"
cc -O1 "${defs[@]}" -o "$F/imgprog" "$LK_DIR/imgprog.c" -L"$F" -limg -Wl,-rpath,"$F" || fail "cc imgprog"
head -c $((16 * PAGE)) /dev/urandom >"$F/data.bin"
lk_evict "$F/libimg.so" "$F/imgprog" "$F/data.bin"
lk_run P "$F/imgprog" "$F/data.bin"
lk_conf "$W/conf" LockBudget=1G
lk_driver "$W/conf"
lk_cmd protect "$P" img.service
lk_dump

# flags NAME: pageflags over the region the program printed as NAME.
flags() {
	local a n
	read -r a n < <(awk -v k="$1" '$1 == k { print $2, $3 }' "$P_OUT")
	[ -n "$n" ] || fail "the program printed no $1"
	"$W/pageflags" "$P" "${a#0x}" "$n" || fail "pageflags $1"
}
# count STRING CHAR
count() { local s=${1//[^$2]/}; echo "${#s}"; }
# The per-page rule: a page is locked exactly when the program maps it
# as the file's page (nobody else maps these files).
rule_holds() { # name file proc
	local i bad=0
	for ((i = 0; i < ${#2}; i++)); do
		[ "${3:i:1}" = f ] && [ "${2:i:1}" != L ] && bad=$((bad + 1))
		[ "${3:i:1}" != f ] && [ "${2:i:1}" = L ] && bad=$((bad + 1))
	done
	[ "$bad" = 0 ] || { echo "  $1: file=$2"; echo "  $1: proc=$3"; }
	[ "$bad" = 0 ]
}
check_region() { # name min-locked max-locked
	local out fs ps
	out=$(flags "$1")
	fs=${out#file=}; fs=${fs%% *}; ps=${out##*proc=}
	local L; L=$(count "$fs" L)
	echo "$1: file=$fs proc=$ps"
	rule_holds "$1" "$fs" "$ps" && pass "$1: every page the program maps as the file's is locked, no other" ||
		fail_later "$1: locked pages differ from the pages it maps"
	[ "$L" -ge "$2" ] && [ "$L" -le "$3" ] && pass "$1: $L pages locked (from $2 to $3)" ||
		fail_later "$1: $L pages locked, expected $2 to $3"
	[ "$(count "$ps" A)" = 0 ] || fail_later "$1: an anonymous page is mlocked"
	REGION_FILE=$fs REGION_PROC=$ps
}

check_region ro $((RO / 2)) $((RO / 2 + 16))
[ "$(count "${REGION_FILE:RO/2+16}" L)" = 0 ] && pass "ro: the unread half is not locked" ||
	fail_later "ro: unread pages locked"
check_region relro "$RELRO" "$RELRO"
check_region data $((DATA / 2)) $((DATA / 2))
w=${REGION_PROC:0:DATA/2}; wf=${REGION_FILE:0:DATA/2}
[ "$(count "$w" a)" = $((DATA / 2)) ] && [ "$(count "$wf" r)" = $((DATA / 2)) ] &&
	pass "data: the $((DATA / 2)) written pages are the program's own copies; their file pages are resident, not locked" ||
	fail_later "data: written half proc=$w file=$wf"
out=$(flags datafile)
echo "datafile: $out"
fs=${out#file=}; fs=${fs%% *}
[ "$(count "$fs" L)" = 0 ] && [ "$(count "$fs" r)" -gt 0 ] && pass "the data file is resident and not locked" ||
	fail_later "data file: $out"
grep -q "path=$F/data.bin" "$W/dump" && fail_later "the data file is in the lock set: $(grep data.bin "$W/dump")"
out=$(flags anon)
echo "anon: $out"
ps=${out##*proc=}
[ "$(count "$ps" a)" = 16 ] && pass "anonymous memory: 16 pages present, none mlocked" || fail_later "anon: $out"
[ "$(awk '/^VmLck:/ { print $2 }' "/proc/$P/status")" = 0 ] || fail_later "the program has locked memory"

# The r-- head (ELF header, .dynsym, .dynstr, .rela): locked where used.
head=$(range_lines "$F/libimg.so" 'r--' | awk '/ offset=0 /' | head -1)
[ -n "$head" ] && [ "$(field "$head" locked)" -gt 0 ] &&
	pass "the r-- head is locked ($(field "$head" locked) bytes)" || fail_later "head: '$head'"
l=$(file_line "$F/libimg.so")
nmaps=$(grep -c " $F/libimg.so$" "/proc/$P/maps")
[ "$(field "$l" ranges)" = "$nmaps" ] && pass "one range per mapping of the library ($nmaps)" ||
	fail_later "ranges: $l, $nmaps mappings"
[ "$(total locked)" = "$(dump_vmlck)" ] || fail_later "total $(total locked) VmLck $(dump_vmlck)"

n=$(grep -c "^memory" "$P_OUT" || true)
kill -USR1 "$P"
mem_said() { [ "$(grep -c "^memory" "$P_OUT" || true)" -gt "$n" ]; }
wait_until 5 mem_said
grep -q "^memory ok" "$P_OUT" && pass "the program's memory holds what it wrote" ||
	fail_later "program memory: $(grep ^memory "$P_OUT")"
has_event LOCK_MLOCK_FAILED EXECGUARD_EXE~"*" && fail_later "mlock failed: $(events LOCK_MLOCK_FAILED)"
lk_finish
