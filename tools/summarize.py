#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Count results from meson's testlog.json files and from extra result
lines ("PASS name" / "FAIL name" / "SKIP name"); print the failures and
a closing 'N passed, N failed, N skipped' line. Exit 1 on any failure."""
import json
import sys

passed, failed, skipped = [], [], []
for arg in sys.argv[1:]:
    kind, _, path = arg.partition(':')
    try:
        lines = open(path, encoding='utf-8', errors='replace').read().splitlines()
    except OSError as e:
        failed.append(f'{kind}: cannot read {path}: {e.strerror}')
        continue
    for line in lines:
        if not line.strip():
            continue
        if kind == 'extra':
            status, _, name = line.partition(' ')
            {'PASS': passed, 'FAIL': failed, 'SKIP': skipped}.get(status, failed).append(name)
            continue
        t = json.loads(line)
        name = f"{kind}/{t['name']}"
        result = t['result']
        if result in ('OK', 'EXPECTEDFAIL'):
            passed.append(name)
        elif result == 'SKIP':
            skipped.append(name)
        else:
            failed.append(f'{name} ({result})')

for s in skipped:
    print(f'skipped: {s}')
for f in failed:
    print(f'FAILED: {f}')
print(f'{len(passed)} passed, {len(failed)} failed, {len(skipped)} skipped')
sys.exit(1 if failed or not passed else 0)
