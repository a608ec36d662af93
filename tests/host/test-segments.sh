#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# execguardctl segments on a real cgroup: a program using a library with
# every kind of segment (lock/imglib.c, on a file system with read-ahead
# off) and a data file, plus a helper that is not running, named with
# --file. The JSON (read by a JSON parser) lists the library as an image
# with its four PT_LOAD segments (r--, r-x, r--, rw- with relro), each
# resident as an independent mincore() of the same file range says, the
# data file as data (not ELF), the helper as named; looking does not bring
# the helper's pages into the page cache; bad targets are errors with the
# documented exit status.
set -u
. "$(dirname "$0")/lock/lib.sh"
lk_setup
need_cgroup2
EXECGUARDCTL=${EXECGUARDCTL:?set by meson}
command -v python3 >/dev/null || skip "needs python3 to parse the JSON"
RO=64 RELRO=32 DATA=32
defs=("-DRO_PAGES=$RO" "-DRELRO_PAGES=$RELRO" "-DDATA_PAGES=$DATA")
cc -O1 -shared -fPIC -Wl,-z,relro -Wl,-z,now "${defs[@]}" -o "$F/libimg.so" "$LK_DIR/imglib.c" || fail "cc libimg"
cc -O1 "${defs[@]}" -o "$F/imgprog" "$LK_DIR/imgprog.c" -L"$F" -limg -Wl,-rpath,"$F" || fail "cc imgprog"
cp "$F/imgprog" "$F/helper"
head -c $((16 * PAGE)) /dev/urandom >"$F/data.bin"
lk_evict "$F/libimg.so" "$F/imgprog" "$F/data.bin" "$F/helper"

cg=execguard-segments-$$
new_cgroup "$cg"
lk_run P sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$CG2/$cg" "$F/imgprog" "$F/data.bin"

"$EXECGUARDCTL" --json segments --cgroup="/$cg" --file="$F/helper" >"$W/seg.json" || fail "segments failed: exit $?"
# The independent numbers, right after (the program is idle).
python3 - "$W/seg.json" "$F" >"$W/ranges" <<'PY' || fail "bad JSON: $(head -c 300 "$W/seg.json")"
import json, sys
d = json.load(open(sys.argv[1]))
for f in d["files"]:
    if f["path"] == sys.argv[2] + "/libimg.so":
        for s in f["segments"]:
            print(s["offset"], s["size"], s["resident"])
PY
while read -r off size res; do
	ind=$("$W/resident" --file "$F/libimg.so" "$off" "$size" | sed -n 's/^resident=\([0-9]*\) .*/\1/p')
	d=$((ind - res)); d=${d#-}
	[ "$d" -le $((2 * PAGE)) ] && pass "segment at $off: resident $res, independent mincore $ind" ||
		fail_later "segment at $off: resident $res, independent mincore $ind"
done <"$W/ranges"
[ -s "$W/ranges" ] || fail_later "no segments of libimg.so in the JSON"

python3 - "$W/seg.json" "$F" "$P" "$RO" "$PAGE" <<'PY' && pass "the JSON says what the files are" || fail_later "JSON checks failed"
import json, sys
d = json.load(open(sys.argv[1]))
F, pid, ro, page = sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
files = {f["path"]: f for f in d["files"]}
ok = True
def check(cond, what):
    global ok
    if not cond:
        print("FAIL:", what)
        ok = False
check(d["cgroup"].startswith("/execguard-segments-"), "cgroup " + str(d["cgroup"]))
check(pid in d["pids"], "the program's pid is listed")
lib = files.get(F + "/libimg.so")
check(lib is not None, "libimg.so listed")
if lib:
    check(lib["executable"] and lib["elf"] and lib["processes"] == 1, "libimg.so is an image of 1 process")
    perms = [s["perms"] for s in lib["segments"]]
    check(perms == ["r--", "r-x", "r--", "rw-"], "libimg.so segments " + str(perms))
    check([s["relro"] for s in lib["segments"]] == [False, False, False, True], "relro in the rw- segment")
    rod = lib["segments"][2]
    check(ro // 2 * page <= rod["resident"] < ro * page, ".rodata half resident: %d" % rod["resident"])
    check(all(s["resident"] <= s["size"] for s in lib["segments"]), "resident <= size")
data = files.get(F + "/data.bin")
check(data is not None and not data["executable"] and not data["elf"] and data["segments"] == [], "data.bin is data")
check(data is not None and data["resident"] == 16 * page, "data.bin resident, as read")
h = files.get(F + "/helper")
check(h is not None and h["named"] and not h["executable"] and h["processes"] == 0 and h["elf"], "helper named")
check(h is not None and h["resident"] == 0, "helper not resident (evicted, not running)")
prog = files.get(F + "/imgprog")
check(prog is not None and prog["executable"], "imgprog is an image")
t = d["totals"]["by_perms"]
check(set(t) >= {"r--", "r-x", "rw-"}, "totals by perms " + str(sorted(t)))
check(d["totals"]["errors"] == 0, "nothing unmeasured")
sys.exit(0 if ok else 1)
PY
[ "$(file_resident "$F/helper")" = 0 ] && pass "looking at the helper left none of it in the page cache" ||
	fail_later "the helper is resident after looking: $(file_resident "$F/helper")"

"$EXECGUARDCTL" segments "$P" >"$W/seg.txt" || fail_later "segments PID failed"
grep -q "^$F/libimg.so (1 processes, image)" "$W/seg.txt" && pass "text output lists the library" ||
	fail_later "text output: $(head -5 "$W/seg.txt")"

expect_exit() { # status args...
	local want=$1 rc=0
	shift
	"$EXECGUARDCTL" "$@" >/dev/null 2>"$W/err" || rc=$?
	[ "$rc" = "$want" ] && pass "segments $*: exit $rc ($(head -1 "$W/err"))" || fail_later "segments $*: exit $rc, wanted $want"
}
expect_exit 2 segments
expect_exit 2 segments --cgroup=relative/path
expect_exit 2 segments "$P" --cgroup="/$cg"
expect_exit 1 segments --cgroup="/no-such-cgroup-$$"
expect_exit 1 segments --file="$W"
expect_exit 1 segments 2147483600
expect_exit 2 status --file="$F/helper"
lk_finish
