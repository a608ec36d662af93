#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Every policy example of the documentation (README.md, docs/*.md, the man
# pages) is checked as an administrator would check it: execguardctl
# check-config, no error and no warning. An example that names a file the
# project ships (# /etc/execguard.d/containers.conf, # /usr/lib/...) has
# the rules of that file.
set -u
SRC=${SRC:?set by meson}
EXECGUARDCTL=${EXECGUARDCTL:?set by meson}
T=$(mktemp -d /tmp/execguard-docex-XXXXXX)
trap 'rm -rf "$T"' EXIT
bad=0
fail() { echo "FAIL: $*"; bad=1; }
shopt -s nullglob
docs=("$SRC/README.md" "$SRC"/docs/*.md "$SRC"/man/*.scd)
shopt -u nullglob
mkdir "$T/ex"
python3 "$SRC/tests/doc-examples.py" policies "$T/ex" "${docs[@]}" > "$T/list" || fail "doc-examples.py"
echo "# the defaults" > "$T/empty.conf"
printf '[X-ExecGuard]\nProtect=no\n' > "$T/none.service"
rules() { grep -v '^#' | grep -v '^$'; }
n=0
while read -r name where; do
	n=$((n + 1))
	f=$T/ex/$name
	where=${where#"$SRC/"}
	case $name in
	*.conf) "$EXECGUARDCTL" --json check-config -c "$f" "$T/none.service" > "$T/out.json" 2>&1 ;;
	*.unit) "$EXECGUARDCTL" --json check-config -c "$T/empty.conf" "$f" > "$T/out.json" 2>&1 ;;
	esac
	python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
problems = ["%s:%s: %s" % (e["file"].rsplit("/", 1)[-1], e["line"], e["message"]) for e in d["errors"] + d["warnings"]]
assert d["ok"] and not problems, problems
assert sys.argv[2].endswith(".conf") or len(d["unit_files"]) == 1' "$T/out.json" "$name" 2> "$T/err" ||
		{ fail "$where: the example does not pass check-config: $(tail -n 1 "$T/err")"; sed 's/^/    /' "$f"; }
	# Named as a shipped file: the same rules.
	shipped=$(sed -n '1s|^# \(/[^ ]*\.conf\)$|\1|p' "$f")
	if [ -n "$shipped" ]; then
		for s in "$SRC/conf/examples" "$SRC/conf/vendor" "$SRC/units/examples"; do
			[ -f "$s/${shipped##*/}" ] || continue
			diff <(rules < "$s/${shipped##*/}") <(rules < "$f") > /dev/null ||
				fail "$where: the example of $shipped differs from ${s#"$SRC/"}/${shipped##*/}"
		done
	fi
done < "$T/list"
[ "$n" -ge 5 ] || fail "only $n policy examples found in ${docs[*]}"
[ $bad = 0 ] && echo "PASS: $n policy examples of the documentation pass check-config"
exit $bad
