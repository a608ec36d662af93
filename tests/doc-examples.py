#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""The examples of the documentation, taken out of it: policy files and
unit sections (to check with execguardctl check-config) and the commands
an administrator is shown. Used by tests/test-doc-examples.sh and
tests/host/test-doc-commands.sh.

  doc-examples.py policies DIR FILE...   write each policy example to DIR
      as NNN.conf (a policy file) or NNN.unit (a unit file or drop-in with
      an [X-ExecGuard] section) and print "NNN.conf SOURCE:LINE" per example
  doc-examples.py commands FILE...       print "SOURCE:LINE<TAB>COMMAND" for
      every command line shown in a code block (a "$ " or "# " prompt
      removed), one per line
"""
import re
import sys

SECTION = re.compile(r'^\s*\[(Daemon|Rule [^\]\s]+|X-ExecGuard)\]')


def blocks(path):
    """(line of the first line, info string, lines) of every fenced block."""
    lines = open(path, encoding='utf-8').read().split('\n')
    i = 0
    while i < len(lines):
        m = re.match(r'^(\s*)```(\S*)\s*$', lines[i])
        if not m:
            i += 1
            continue
        indent, info, start, body = m.group(1), m.group(2), i + 2, []
        i += 1
        while i < len(lines) and lines[i].strip() != '```':
            body.append(lines[i][len(indent):] if lines[i].startswith(indent) else lines[i])
            i += 1
        yield start, info, body
        i += 1
    # scdoc: a literal block is also a paragraph indented by a tab in an
    # EXAMPLES section: commands, one a line.
    if path.endswith('.scd'):
        in_examples = False
        for n, line in enumerate(lines, 1):
            if line.startswith('# '):
                in_examples = line.strip() == '# EXAMPLES'
            elif in_examples and line.startswith('\t') and not line.startswith('\t\t'):
                yield n, 'scd-indent', [line[1:]]


def is_policy(info, body):
    if info == 'ini':
        return True
    if info not in ('', 'scd-indent'):
        return False
    return any(SECTION.match(l) for l in body)


def policies(outdir, files):
    n = 0
    for path in files:
        for line, info, body in blocks(path):
            if not is_policy(info, body):
                continue
            n += 1
            text = '\n'.join(body).rstrip('\n') + '\n'
            kind = 'unit' if any(re.match(r'^\s*\[X-ExecGuard\]', l) for l in body) else 'conf'
            name = '%03d.%s' % (n, kind)
            with open('%s/%s' % (outdir, name), 'w', encoding='utf-8') as f:
                f.write(text)
            print('%s %s:%d' % (name, path, line))


PROGRAMS = ('execguardctl', 'execguardd', 'systemctl', 'journalctl', 'busctl', 'ln', 'apt', 'tools/',
            'bench/', 'kernel/', 'tests/', 'meson', 'promtool', 'curl', 'sudo', 'podman')


def commands(files):
    for path in files:
        for line, info, body in blocks(path):
            if info not in ('', 'sh', 'console', 'shell', 'bash', 'scd-indent'):
                continue
            if is_policy(info, body):
                continue
            # sh blocks and scdoc's are commands; in other markdown blocks
            # only lines with a "# " or "$ " prompt are (the rest is output)
            all_commands = (info in ('sh', 'shell', 'bash', 'scd-indent') or path.endswith('.scd') or
                            all(l.strip().startswith(PROGRAMS) for l in body if l.strip()))
            for k, l in enumerate(body):
                prompted = re.match(r'^(\$|#) ', l.strip())
                c = re.sub(r'^(\$|#) ', '', l.strip())
                c = re.sub(r'\s+#\s.*$', '', c) if info in ('sh', 'shell', 'bash') else c
                if c.startswith(PROGRAMS) and (all_commands or prompted):
                    print('%s:%d\t%s' % (path, line + k, c))


if __name__ == '__main__':
    if sys.argv[1] == 'policies':
        policies(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == 'commands':
        commands(sys.argv[2:])
    else:
        sys.exit(__doc__)
