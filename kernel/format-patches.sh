#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Developer tool: write kernel/patches (format-patch files, cover letter,
# series) from a git tree of the kernel source in which the series is a
# run of commits on top of BASE.
#
# Usage: kernel/format-patches.sh TREE BASE COVER.txt [OUT]
#   COVER.txt: first line the subject, then the cover letter's body.
#   OUT: where to write them (default kernel/patches; kernel/execstorm
#   for the exec-storm pair, a series of its own)

set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd -P)
tree=$1 base=$2 cover=$3
out=${4:-$here/patches}

rm -f "$out"/*.patch "$out/series"
mkdir -p "$out"
git -C "$tree" format-patch -q --cover-letter --no-signature \
	--zero-commit -o "$out" "$base"

# The cover letter: subject and body from COVER.txt
python3 - "$out/0000-cover-letter.patch" "$cover" <<'PY'
import sys
path, cover = sys.argv[1], sys.argv[2]
text = open(cover).read().split('\n', 1)
subject, body = text[0].strip(), text[1].strip('\n')
s = open(path).read()
s = s.replace('*** SUBJECT HERE ***', subject).replace('*** BLURB HERE ***', body)
open(path, 'w').write(s)
PY

for p in "$out"/[0-9][0-9][0-9][0-9]-*.patch; do
	p=${p##*/}
	[ "${p#0000-}" = "$p" ] && echo "$p"
done >"$out/series"
echo "wrote $(wc -l <"$out/series") patches and a cover letter to $out" >&2
