#!/bin/sh
# SPDX-License-Identifier: GPL-2.0-or-later
# Generate C for the lock tests' programs with a large text.
#   gen-text.sh lib  PREFIX NFUNCS   > libPREFIX.c
#       a shared library with NFUNCS functions of one page each and a
#       table PREFIX_table[] / PREFIX_n of them
#   gen-text.sh prog LIB1 [LIB2]     > prog.c
#       a program that runs "PROG CALLS1 [CALLS2]" functions of LIB1 (and
#       LIB2), prints "ready", and on each SIGUSR1 runs CALLS1 more from
#       the middle of LIB1 and prints "grown".
# The big text is in libraries so that the program's own start-up faults
# (whose read-around would cover megabytes) do not touch it, and the
# program asks MADV_RANDOM for all exec segments before it runs any of it:
# only the pages that run are read (plus what the file system rounds to).
set -eu
kind=$1
case $kind in
lib)
	awk -v p="$2" -v n="$3" 'BEGIN {
		for (i = 0; i < n; i++)
			printf "__attribute__((noinline, aligned(4096))) void %s_%d(void) { __asm__ volatile(\".fill 4000,1,0x90\"); }\n", p, i
		printf "const int %s_n = %d;\n", p, n
		printf "void (*const %s_table[%d])(void) = {\n", p, n
		for (i = 0; i < n; i++)
			printf "\t%s_%d,\n", p, i
		print "};"
	}'
	;;
prog)
	awk -v l1="$2" -v l2="${3:-}" 'BEGIN {
		print "#define _GNU_SOURCE"
		print "#include <link.h>\n#include <signal.h>\n#include <stdint.h>\n#include <stdio.h>\n#include <stdlib.h>\n#include <sys/mman.h>\n#include <unistd.h>"
		printf "extern void (*const %s_table[])(void);\nextern const int %s_n;\n", l1, l1
		if (l2 != "")
			printf "extern void (*const %s_table[])(void);\nextern const int %s_n;\n", l2, l2
		print "static int random_exec(struct dl_phdr_info *info, size_t size, void *data) {"
		print "\tuintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);"
		print "\t(void)size; (void)data;"
		print "\tfor (int i = 0; i < info->dlpi_phnum; i++) {"
		print "\t\tconst ElfW(Phdr) *ph = &info->dlpi_phdr[i];"
		print "\t\tif (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;"
		print "\t\tuintptr_t s = (info->dlpi_addr + ph->p_vaddr) & ~(page - 1);"
		print "\t\tuintptr_t e = (info->dlpi_addr + ph->p_vaddr + ph->p_memsz + page - 1) & ~(page - 1);"
		print "\t\tmadvise((void *)s, e - s, MADV_RANDOM);"
		print "\t}"
		print "\treturn 0;"
		print "}"
		print "static volatile sig_atomic_t more;"
		print "static void on_usr1(int s) { (void)s; more++; }"
		print "int main(int argc, char **argv) {"
		print "\tint calls = argc > 1 ? atoi(argv[1]) : 16, done = 0;"
		print "\tsigset_t block, old;"
		print "\tdl_iterate_phdr(random_exec, NULL);"
		printf "\tfor (int i = 0; i < calls && i < %s_n; i++) %s_table[i]();\n", l1, l1
		if (l2 != "") {
			print "\tint calls2 = argc > 2 ? atoi(argv[2]) : 16;"
			printf "\tfor (int i = 0; i < calls2 && i < %s_n; i++) %s_table[i]();\n", l2, l2
		}
		print "\tsigemptyset(&block); sigaddset(&block, SIGUSR1);"
		print "\tsigprocmask(SIG_BLOCK, &block, &old);"
		print "\tsignal(SIGUSR1, on_usr1);"
		print "\tprintf(\"ready\\n\"); fflush(stdout);"
		print "\tfor (;;) {"
		print "\t\twhile (done >= more) sigsuspend(&old);"
		printf "\t\tfor (int i = 0; i < calls; i++) %s_table[(%s_n / 2 + done * calls + i) %% %s_n]();\n", l1, l1, l1
		print "\t\tdone++;"
		print "\t\tprintf(\"grown\\n\"); fflush(stdout);"
		print "\t}"
		print "}"
	}'
	;;
*)
	echo "usage: $0 lib PREFIX NFUNCS | prog LIB1 [LIB2]" >&2
	exit 2
	;;
esac
