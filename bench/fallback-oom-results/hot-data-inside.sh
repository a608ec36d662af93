# Superseded by the selftest test_exec_protect_hot_data (patch 9), the same
# check in C that CI runs; kept only to reproduce 2026-12-06-hot-data.txt,
# the runs that rejected the candidate fix.
# The candidate fix's risk, as a check: a cgroup (memory.max 44M,
# memory.exec_protect max) maps 16 MiB of text and touches it once (cold,
# protected), maps 16 MiB of data read-only and keeps touching it (hot,
# unprotected), then allocates 16 MiB of anonymous memory (no swap): about
# 23 MiB is left for file pages, so the text fits and the data does not.
# Protection holds when the text stays (pgexec_breached=0) and the data is
# what gives way. Run in a guest:
#   tests/vm/vm-run.sh --kernel BZIMAGE --mem 1G --disk 256M -- \
#       bash "$PWD/bench/fallback-oom-results/hot-data-inside.sh" mglru|classic
# (a path from the host root: the command starts in the scratch disk)
# shellcheck shell=bash
set -eu
case ${1:-mglru} in mglru) echo y ;; classic) echo n ;; *) exit 2 ;; esac >/sys/kernel/mm/lru_gen/enabled
cg=/sys/fs/cgroup
echo +memory > $cg/cgroup.subtree_control
head -c 16M /dev/urandom > text; head -c 16M /dev/urandom > data
sync; echo 3 > /proc/sys/vm/drop_caches
mkdir $cg/t
echo max > $cg/t/memory.exec_protect
echo 44M > $cg/t/memory.max
echo $$ > $cg/t/cgroup.procs
python3 - <<'PY'
import mmap, os, time
def m(path, prot):
    fd = os.open(path, os.O_RDONLY)
    return mmap.mmap(fd, os.fstat(fd).st_size, flags=mmap.MAP_PRIVATE, prot=prot)
def touch(mm):
    s = 0
    for i in range(0, len(mm), 4096):
        s += mm[i]
    return s
t = m('text', mmap.PROT_READ | mmap.PROT_EXEC)
d = m('data', mmap.PROT_READ)
touch(t)                      # the text: once, then cold
for _ in range(6):            # the data: in use, aged young
    touch(d); time.sleep(0.5)
hog = []
for i in range(16):           # anon, not reclaimable (no swap): file must go
    b = bytearray(1 << 20)
    for j in range(0, len(b), 4096): b[j] = 1
    hog.append(b)
    touch(d)                  # the data stays in use meanwhile
def stat(k):
    for l in open('/sys/fs/cgroup/t/memory.stat'):
        if l.startswith(k + ' '): return int(l.split()[1])
ev = [l.strip() for l in open('/sys/fs/cgroup/t/memory.events')]
print('MIXED pgexec_breached=%d exec_protect_usage_kb=%d file_kb=%d anon_kb=%d %s' % (
    stat('pgexec_breached'), stat('exec_protect_usage') >> 10, stat('file') >> 10, stat('anon') >> 10,
    ' '.join(e.replace(' ', '=') for e in ev)))
PY
fincore text data | sed 's/^/FINCORE /'
