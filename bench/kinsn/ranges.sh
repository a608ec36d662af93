#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# ranges.sh BUILD_DIR OBJ... : for kinsn, "NAME START END" of each object
# file's functions in BUILD_DIR/vmlinux, a line for each run of them
# (.text, .init.text, ...); NAME is the object's base name (mm/vmscan.o:
# vmscan). A run is the functions of the object between two of another;
# it starts at a function whose name is unique in vmlinux.
set -euo pipefail
b=$1; shift
[ -f "$b/vmlinux" ] || { echo "ranges.sh: no $b/vmlinux" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
nm -S --defined-only "$b/vmlinux" | awk 'NF == 4 && $3 ~ /^[Tt]$/ {print $4, $1, $2}' >"$tmp/vmlinux"
for o in "$@"; do
	nm --defined-only "$b/$o" | awk '$2 ~ /^[Tt]$/ {print $3}' | sort -u >"$tmp/obj"
	python3 - "$o" "$tmp/obj" "$tmp/vmlinux" <<'PY'
import sys, collections
name = sys.argv[1].split("/")[-1].removesuffix(".o")
want = set(l.strip() for l in open(sys.argv[2]))
syms = sorted((int(a, 16), int(a, 16) + int(s, 16), n)
              for n, a, s in (l.split() for l in open(sys.argv[3])))
count = collections.Counter(n for _, _, n in syms)
runs, open_run = [], False
for a, e, n in syms:
    if n in want and open_run:
        runs[-1][1] = max(runs[-1][1], e)
    elif n in want and count[n] == 1:
        runs.append([a, e])
        open_run = True
    elif n not in want:
        open_run = False
if not runs:
    sys.exit(f"ranges.sh: no function of {sys.argv[1]} in vmlinux")
for lo, hi in runs:
    print(f"{name} {lo:x} {hi:x}")
PY
done
