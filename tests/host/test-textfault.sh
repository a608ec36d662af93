#!/bin/bash
# SPDX-License-Identifier: GPL-2.0-or-later
# Text faults per unit on this kernel, as the daemon reads them
# (daemon/textfault.c through tests/host/textfault/textfault-probe.c): a
# process in a test cgroup maps a file executable and reads every page;
# the test takes the file's pages out of the page cache (the process
# drops its page table entries, then posix_fadvise DONTNEED), the
# process reads them again, and the reading must count about the major
# faults the process took (getrusage), not zero and not the pages it
# read; an idle process in another cgroup shows none. Where the kernel
# counts (pgmajfault_exec) the estimate is forced, so that it is what is
# tested. Behaviour, not timing: the probe samples at its own pace and
# the test waits for samples after each step.
. "$(dirname "$0")/lib.sh"
test_init root cgroup2
PROBE=${TEXTFAULT_PROBE:-}
[ -x "$PROBE" ] || fail "TEXTFAULT_PROBE is not set (meson sets it)"
command -v cc >/dev/null || skip "no C compiler for the test's program"

# The file must be on a file system whose pages are dropped and read back
# (not tmpfs, where they are swapped).
D=$T
for d in "$T" /var/tmp; do
	[ "$(stat -f -c %T "$d")" != tmpfs ] && { D=$d; break; }
done
[ "$(stat -f -c %T "$D")" != tmpfs ] || skip "no disk-backed directory for the text file ($T and /var/tmp are tmpfs)"
[ "$D" = "$T" ] || { D=$(mktemp -d /var/tmp/execguard-textfault-XXXXXX); on_exit "rm -rf '$D'"; }

cat >"$T/toucher.c" <<'C'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
/* toucher FILE FIFO: maps FILE executable; commands from FIFO:
 * touch  read a byte of every page, in strides; prints
 *        "touched PAGES MAJFLT" (its own major faults during it)
 * zap    drop its page table entries (the file's pages stay cached
 *        until someone drops them); prints "zapped"
 * toucher --evict FILE: write FILE back and drop its cached pages
 * (posix_fadvise DONTNEED: those nobody maps) */
static long majflt(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return ru.ru_majflt;
}
int main(int argc, char **argv)
{
	int fd = open(argv[1], O_RDONLY);
	struct stat st;
	FILE *in = fopen(argv[2], "r+");
	char cmd[64];
	long page = sysconf(_SC_PAGESIZE);
	volatile unsigned sum = 0;
	unsigned char *p;
	size_t n;

	if (!strcmp(argv[1], "--evict")) {
		fd = open(argv[2], O_RDONLY);
		return fd < 0 || fdatasync(fd) < 0 || posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) != 0;
	}
	if (fd < 0 || !in || fstat(fd, &st) < 0)
		return 2;
	n = (size_t)st.st_size / (size_t)page;
	p = mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 3;
	/* No read-around: a fault per page read back, as for text that is
	 * scattered over a large binary. */
	madvise(p, (size_t)st.st_size, MADV_RANDOM);
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("ready %zu\n", n);
	while (fgets(cmd, sizeof(cmd), in)) {
		if (!strncmp(cmd, "touch", 5)) {
			long m0 = majflt();
			for (size_t s = 0; s < 64; s += 8)
				for (size_t i = s; i < n; i += 64)
					sum += p[i * (size_t)page];
			printf("touched %zu %ld\n", n, majflt() - m0);
		} else if (!strncmp(cmd, "zap", 3)) {
			madvise(p, (size_t)st.st_size, MADV_DONTNEED);
			printf("zapped\n");
		}
	}
	return 0;
}
C
cc -O1 -o "$T/toucher" "$T/toucher.c" || fail "cannot build the test's program"
head -c 16M /dev/urandom >"$D/text.bin"

A=execguard-textfault-a-$$
B=execguard-textfault-b-$$
new_cgroup "$A"
new_cgroup "$B"
mkfifo "$T/cmd"
# Read and write: opening a FIFO so does not wait for the other end.
exec 3<>"$T/cmd"
run_in "$A" "$T/toucher" "$D/text.bin" "$T/cmd" >"$T/toucher.out"
run_in "$B" sleep 600
wait_until 10 grep -q '^ready' "$T/toucher.out" || fail "the toucher did not start: $(cat "$T/toucher.out")"
# As a service that has run a while: all of its text read once.
echo touch >&3
wait_until 30 grep -q '^touched' "$T/toucher.out" || fail "the first touch did not end"

"$PROBE" --estimate --interval 300 "/$A" "/$B" >"$T/probe.out" 2>&1 &
PROBE_PID=$!
KIDS+=("$PROBE_PID")
samples() { grep -c "^sample .* /$A source" "$T/probe.out"; }
# wait_samples N: N more samples of A than now.
wait_samples() {
	local want=$(($(samples) + $1))
	wait_until 30 eval '[ "$(samples)" -ge '"$want"' ]' || fail "the probe stopped sampling: $(tail -n 3 "$T/probe.out")"
}
wait_samples 2
field_of() { sed -n "s/.* $1 \([^ ]*\).*/\1/p"; }
last_a() { grep "^sample .* /$A source" "$T/probe.out" | tail -n 1; }
last_b() { grep "^sample .* /$B source" "$T/probe.out" | tail -n 1; }
before=$(last_a | field_of faults)
[ "$(last_a | field_of source)" = estimate ] || fail "not the estimate: $(last_a)"
[ "$(last_a | field_of pages)" -ge 4096 ] || fail "the text file is not watched: $(last_a)"

# Evict: the process lets go of its page table entries, then the file's
# cache is dropped; the probe must see the pages leave.
echo zap >&3
wait_until 10 grep -q '^zapped' "$T/toucher.out" || fail "zap did not answer"
"$T/toucher" --evict "$D/text.bin" || fail "could not drop the file's cache"
wait_samples 2
evicted=$(last_a | field_of evicted)
[ "$evicted" -ge 2048 ] || fail "the probe did not see the text leave: $(last_a)"
pass "the probe saw $evicted pages of text evicted"

# Back: the process reads it all again, in strides.
echo touch >&3
wait_until 60 eval '[ "$(grep -c ^touched "$T/toucher.out")" -ge 2 ]' || fail "the second touch did not end"
read -r _ pages majflt < <(grep '^touched' "$T/toucher.out" | tail -n 1)
wait_samples 2
kill -TERM "$PROBE_PID"
wait "$PROBE_PID"
echo "toucher: $pages pages read again with $majflt major faults; A: $(last_a); B: $(last_b)"
after=$(last_a | field_of faults)
est=$((after - before))
[ "$majflt" -gt 0 ] || skip "the toucher took no major fault: the cache drop did not work here"
[ "$(last_a | field_of came_back)" -gt 0 ] && pass "the probe saw the text come back" ||
	fail_later "no text came back in the probe's view: $(last_a)"
[ "$est" -gt 0 ] && pass "text faults counted: $est (the process took $majflt)" ||
	fail_later "no text faults counted after the text was read again ($majflt major faults)"
# The order of magnitude of the faults taken, not of the pages read back
# (read-around brings 32 a fault).
[ "$est" -ge $((majflt / 2)) ] && [ "$est" -le $((majflt * 2 + 2)) ] &&
	pass "the estimate $est is within a factor of 2 of the $majflt major faults" ||
	fail_later "the estimate $est is not within a factor of 2 of $majflt major faults"
[ "$est" -lt "$pages" ] || fail_later "the estimate $est counts pages ($pages), not faults"
[ "$(last_b | field_of faults)" = 0 ] && pass "an idle process shows no text faults" ||
	fail_later "idle cgroup B has text faults: $(last_b)"
# Never backwards over the run.
grep "^sample .* /$A source" "$T/probe.out" | field_of faults |
	awk 'NR > 1 && $1 < last { bad = 1 } { last = $1 } END { exit bad }' &&
	pass "the counter never went back" || fail_later "the counter went back: $(grep "/$A" "$T/probe.out")"
