# SPDX-License-Identifier: GPL-2.0-or-later
# shellcheck shell=bash
# Runs in the VM (bench/rare-path.sh): MODE DIR
set -eu
mode=$1 dir=$2
cg=/sys/fs/cgroup
cp $dir/prog prog
sync; echo 3 > /proc/sys/vm/drop_caches
echo +memory > $cg/cgroup.subtree_control
mkdir $cg/svc
[ $mode = protected ] && echo max > $cg/svc/memory.exec_protect
sh -c "echo \$\$ > $cg/svc/cgroup.procs; exec ./prog" > prog.out 2> prog.err &
pid=$!
until grep -q ready prog.out; do sleep 0.2; done
# Per ELF segment of the program, what is in the page cache; one SEG line
# each for the log the host greps.
segres() { $dir/execguardctl segments --file=prog | sed -n 's/^  \(.* offset .*\)/SEG \1/p'; }
# the rare path once, long ago: everything it uses is loaded
kill -USR1 $pid
until grep -q rare0 prog.out; do sleep 0.2; done
echo "after the first rare run:"; segres
for _ in 1 2 3; do echo 1G > $cg/svc/memory.reclaim 2>/dev/null || true; done
echo "after reclaim:"; segres
kill -USR1 $pid; wait $pid
echo "after the second rare run:"; segres
echo "RESULT $mode $(grep rare1 prog.out)"
