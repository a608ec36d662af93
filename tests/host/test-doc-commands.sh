#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# The execguardctl commands of the documentation (README.md, docs/*.md,
# the man pages; tests/doc-examples.py finds them), run as shown against a
# daemon on a private bus that protects nginx.service: each must succeed
# (exit 0) and print what it is documented to. Only what names this
# machine is replaced: a PID by the protected process's, a unit file
# under /etc/systemd/system by one written from the documentation's own
# example of it, a unit segments asks systemd about by its cgroup, and
# check-config reads a policy of the test's.
. "$(dirname "$0")/bus/lib-bus.sh"
bus_test_init
command -v jq > /dev/null || skip "jq is not installed (tools/deps.sh test)"

U=nginx.service
unit_cgroup "$S" "$U"
write_conf <<'CONF'
# the defaults, as shipped
CONF
printf '[Rule web]\nMatchUnit=nginx.service\nProtect=yes\n' > "$T/etc/execguard.d/50-web.conf"
start_daemon --cgroup-root="$T/cgroot"
wait_event 5 BUS_NAME || fail "daemon did not take its bus name"
run_in "$S/$U" sleep 600
pid=$LAST_PID
# Backend kernel, no rule names executables: the unit's cgroup is
# protected as a whole (execguardd v3's push path), not pid by pid.
wait_event 5 PUSH_PROTECTED EXECGUARD_UNIT="'$U'" EXECGUARD_CGROUP="'/$S/$U'" ||
	fail "$U's cgroup not protected"

# The documentation's examples of unit files, where its commands name them.
mkdir "$T/examples"
python3 "$SRC/tests/doc-examples.py" policies "$T/examples" "$SRC/README.md" "$SRC"/docs/*.md "$SRC"/man/*.scd > /dev/null
unit_file() { # PATH under /etc/systemd/system: $T's copy, from its example
	local f copy=$T$1
	mkdir -p "$(dirname "$copy")"
	for f in "$T"/examples/*.unit; do
		if [ "$(head -n 1 "$f")" = "# $1" ]; then
			cp "$f" "$copy"
			echo "$copy"
			return
		fi
	done
	printf '[X-ExecGuard]\nProtect=yes\n' > "$copy"
	echo "$copy"
}

n=0
while IFS=$'\t' read -r where cmd; do
	case $cmd in execguardctl*) ;; *) continue ;; esac
	n=$((n + 1))
	where=${where#"$SRC/"}
	run=$cmd
	# a PID of the documentation's (1234, 156) -> the protected one
	run=$(sed -E "s/(explain) [0-9]+/\\1 $pid/" <<< "$run")
	# segments UNIT asks systemd for the unit's cgroup; no systemd on
	# this private bus: the same processes named by that cgroup
	# (host-segments checks the rest of segments)
	run=${run/segments $U/segments --cgroup=/$S/$U}
	for path in $(grep -oE '/etc/systemd/system/[^ ]+' <<< "$run"); do
		run=${run//"$path"/"$(unit_file "$path")"}
	done
	run=${run/check-config/check-config -c "$T/etc/execguard.conf"}
	run=${run//execguardctl/"$EXECGUARDCTL"}
	out=$(bash -o pipefail -c "$run" 2>&1)
	rc=$?
	[ $rc = 0 ] || { fail_later "$where: '$cmd' exited $rc: $out"; continue; }
	case $cmd in
	*" status") grep -q "^$U *yes " <<< "$out" || fail_later "$where: '$cmd' does not show $U protected: $out" ;;
	*" explain "*) grep -q "decision: *protect, decided by web" <<< "$out" || fail_later "$where: '$cmd': $out" ;;
	*" check-config "*) grep -q "^policy OK: .*1 unit file with \[X-ExecGuard\] OK" <<< "$out" || fail_later "$where: '$cmd': $out" ;;
	*"--json libs | jq"*) jq -e 'type == "array"' <<< "$out" > /dev/null || fail_later "$where: '$cmd': $out" ;;
	*"--json segments "*"| jq .totals"*) jq -e '.images >= 1' <<< "$out" > /dev/null || fail_later "$where: '$cmd': no image of $U's sleep: $out" ;;
	esac
	echo "ok: $where: $cmd"
done <<< "$(python3 "$SRC/tests/doc-examples.py" commands "$SRC/README.md" "$SRC"/docs/*.md "$SRC"/man/*.scd)"
[ "$n" -ge 5 ] || fail "only $n execguardctl commands found in the documentation"
[ "$FAILED" = 0 ] || exit 1
pass "the $n execguardctl commands of the documentation run as shown"
