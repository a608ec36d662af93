#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Instructions by kernel function from kinsn's profile= output.

profile.py VMLINUX PROFILE                 the top functions of one boot
profile.py VMLINUX_A PROFILE_A VMLINUX_B PROFILE_B
                                           the functions whose counts differ
                                           most from A to B, by name

A block's instructions go to the function its start lies in (nm's symbols
with sizes); blocks end at branches, so a block lies in one function.
"""
import bisect
import subprocess
import sys


def symbols(vmlinux):
    out = subprocess.run(['nm', '-S', '--defined-only', vmlinux], check=True,
                         capture_output=True, text=True).stdout
    syms = []
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in 'tT':
            syms.append((int(f[0], 16), int(f[1], 16), f[3]))
    syms.sort()
    return syms


def by_function(vmlinux, profile):
    syms = symbols(vmlinux)
    starts = [s[0] for s in syms]
    counts = {}
    for line in open(profile):
        addr, n = line.split()
        addr, n = int(addr, 16), int(n)
        i = bisect.bisect_right(starts, addr) - 1
        name = '?'
        if i >= 0 and addr < syms[i][0] + max(syms[i][1], 1):
            name = syms[i][2]
        counts[name] = counts.get(name, 0) + n
    return counts


def main():
    if len(sys.argv) == 3:
        c = by_function(sys.argv[1], sys.argv[2])
        total = sum(c.values())
        print(f'{total} kernel instructions')
        for name, n in sorted(c.items(), key=lambda x: -x[1])[:40]:
            print(f'{n:14d} {100 * n / total:6.2f}%  {name}')
        return
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    a = by_function(sys.argv[1], sys.argv[2])
    b = by_function(sys.argv[3], sys.argv[4])
    ta, tb = sum(a.values()), sum(b.values())
    print(f'kernel instructions: A {ta}, B {tb}, B - A {tb - ta:+d} ({100 * (tb - ta) / ta:+.3f}%)')
    diff = sorted(set(a) | set(b), key=lambda k: -abs(b.get(k, 0) - a.get(k, 0)))
    print(f"{'B - A':>12} {'A':>14} {'B':>14}  function")
    for name in diff[:40]:
        print(f'{b.get(name, 0) - a.get(name, 0):+12d} {a.get(name, 0):14d} {b.get(name, 0):14d}  {name}')


if __name__ == '__main__':
    main()
