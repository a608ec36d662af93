#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Shell completion (shell-completion/): every command and option that
# --help lists, and the values it names, are offered by the bash and zsh
# completions, run as the shells run them (bash: the completion function
# with COMP_WORDS as readline splits the line; zsh: an interactive zsh in
# a pseudo-terminal, TAB pressed).
set -u
SRC=${SRC:?set by meson}
EXECGUARDD=${EXECGUARDD:?set by meson}
EXECGUARDCTL=${EXECGUARDCTL:?set by meson}
bad=0
fail() { echo "FAIL: $*"; bad=1; }

ctl_help=$("$EXECGUARDCTL" --help)
d_help=$("$EXECGUARDD" --help)
commands=$(sed -n '/^Commands:/,/^$/p' <<<"$ctl_help" | grep -oE '^  [a-z-]+' | tr -d ' ')
long_opts() { grep -oE '(^|[ ,])--[a-z][a-z-]+' | tr -d ' ,' | sort -u; }
short_opts() { grep -oE '^ +-[a-zA-Z] ' | tr -d ' ' | sort -u; }
# The values --help names for an option: "--backend=NAME  ...: a, b or c".
values() { grep -E -- "^ +(-[a-z] )?$1=" <<<"$d_help" | sed -E 's/.*: ([a-z, -]+) or ([a-z-]+).*/\1 \2/; s/.*--[a-z-]+=[A-Z]+ +([a-z, -]+) or ([a-z-]+).*/\1 \2/' | tr -d ','; }
[ "$(values --backend)" = "auto kernel lock none" ] || fail "cannot read --backend's values from --help: $(values --backend)"

# --- bash ---------------------------------------------------------------
# bashcomp FUNCTION WORD...: the candidates for the last word, one a line.
bashcomp() {
	bash -c '
		. "$1"; fn=$2; shift 2
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		COMPREPLY=()
		"$fn" 2>/dev/null
		printf "%s\n" "${COMPREPLY[@]}"' bashcomp "$@"
}
ctl_b=$SRC/shell-completion/bash/execguardctl
d_b=$SRC/shell-completion/bash/execguardd
bash -n "$ctl_b" && bash -n "$d_b" || fail "bash completion: syntax"
got=$(bashcomp "$ctl_b" _execguardctl execguardctl '')
for c in $commands; do grep -qx "$c" <<<"$got" || fail "bash: execguardctl <TAB> lacks $c: $got"; done
got=$(bashcomp "$ctl_b" _execguardctl execguardctl --)
for o in $(long_opts <<<"$ctl_help"); do grep -qE "^$o=?\$" <<<"$got" || fail "bash: execguardctl --<TAB> lacks $o"; done
got=$(bashcomp "$ctl_b" _execguardctl execguardctl -)
for o in $(short_opts <<<"$ctl_help"); do grep -qx -- "$o" <<<"$got" || fail "bash: execguardctl -<TAB> lacks $o"; done
# The command after options and their values, in both spellings.
[ "$(bashcomp "$ctl_b" _execguardctl execguardctl -c /x.conf --json sta)" = status ] || fail "bash: -c FILE --json sta<TAB>"
[ "$(bashcomp "$ctl_b" _execguardctl execguardctl --config = /x.conf sta)" = status ] || fail "bash: --config=FILE sta<TAB>"
bashcomp "$ctl_b" _execguardctl execguardctl explain '' | grep -qx "$$" || fail "bash: explain <TAB> does not offer PIDs ($$)"
[ -z "$(bashcomp "$ctl_b" _execguardctl execguardctl explain 1 '')" ] || fail "bash: explain takes one PID"
bashcomp "$ctl_b" _execguardctl execguardctl segments '' | grep -qx "$$" || fail "bash: segments <TAB> does not offer PIDs ($$)"
bashcomp "$ctl_b" _execguardctl execguardctl --file = "$SRC/conf/vendor/" | grep -q '10-recovery.conf$' ||
	fail "bash: --file=<TAB> does not offer files"
bashcomp "$ctl_b" _execguardctl execguardctl check-config "$SRC/conf/vendor/" | grep -q '10-recovery.conf$' ||
	fail "bash: check-config <TAB> does not offer files"
got=$(bashcomp "$d_b" _execguardd execguardd --)
for o in $(long_opts <<<"$d_help"); do grep -qE "^$o=?\$" <<<"$got" || fail "bash: execguardd --<TAB> lacks $o"; done
got=$(bashcomp "$d_b" _execguardd execguardd -)
for o in $(short_opts <<<"$d_help"); do grep -qx -- "$o" <<<"$got" || fail "bash: execguardd -<TAB> lacks $o"; done
for o in --backend --log-target --log-level; do
	want=$(values "$o" | tr ' ' '\n' | sort)
	[ "$(bashcomp "$d_b" _execguardd execguardd "$o" = '' | sort)" = "$want" ] || fail "bash: execguardd $o=<TAB>: want $want"
done
[ $bad = 0 ] && echo "PASS: bash completion offers every command, option and value of --help"

# --- zsh ----------------------------------------------------------------
if ! command -v zsh > /dev/null; then
	echo "SKIP: zsh is not installed (tools/deps.sh test): its completion not run"
	[ $bad = 0 ] && exit 77
	exit 1
fi
for f in "$SRC"/shell-completion/zsh/_*; do zsh -n "$f" || fail "zsh completion: syntax of $f"; done
# zshcomp LINE WANT...: an interactive zsh (compinit with our directory
# first in fpath) given LINE and TAB; passes when the listing shows every
# WANT, waiting at most 20 s for it.
zshcomp() {
	local line=$1
	shift
	zsh -f -c '
		setopt extendedglob
		zmodload zsh/zpty
		zpty z zsh -f -i
		zpty -w z "PS1=\"> \"; fpath=($1 \$fpath); autoload -U compinit; compinit -u -D; setopt nobeep"
		zpty -w -n z "$2"$'"'"'\t'"'"'
		out= want=("${@:3}")
		for i in {1..100}; do
			sleep 0.2
			while zpty -r -t z chunk 2>/dev/null; do out+=$chunk; done
			clean=${out//$'"'"'\e'"'"'\[[0-9;?]#[a-zA-Z]/}
			missing=()
			for w in $want; do [[ " ${clean//[$'"'"'\r\n'"'"']/ } " == *" $w "* ]] || missing+=($w); done
			(( ${#missing} == 0 )) && break
		done
		zpty -d z
		(( ${#missing} == 0 )) || { print -r -- "missing: $missing"; exit 1; }' \
		zshcomp "$SRC/shell-completion/zsh" "$line" "$@"
}
zshcomp 'execguardctl ' $commands || fail "zsh: execguardctl <TAB>"
mapfile -t opts < <(long_opts <<<"$ctl_help")
zshcomp 'execguardctl --' "${opts[@]}" || fail "zsh: execguardctl --<TAB>"
mapfile -t opts < <(long_opts <<<"$d_help")
zshcomp 'execguardd --' "${opts[@]}" || fail "zsh: execguardd --<TAB>"
for o in --backend --log-target --log-level; do
	# shellcheck disable=SC2046 # values prints the names on one line: one word each
	zshcomp "execguardd $o=" $(values "$o") || fail "zsh: execguardd $o=<TAB>"
done
[ $bad = 0 ] && echo "PASS: zsh completion offers every command, option and value of --help"
exit $bad
