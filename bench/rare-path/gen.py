# SPDX-License-Identifier: GPL-2.0-or-later
# Generates a C++ program with much code and much read-only data, whose
# rare path throws through many frames and formats a message.
import random
random.seed(1)
N = 1500
out = ['#include <cstdio>', '#include <cstring>', '#include <stdexcept>', '#include <string>',
       '#include <vector>', '#include <sys/mman.h>', '#include <sys/resource.h>', '#include <unistd.h>',
       '#include <signal.h>', 'struct Guard { int *p; ~Guard() { if (p) (*p)++; } };']
for i in range(N):
    out.append(f'static const char msg{i}[] = "{"".join(random.choice("abcdefghijklmnopqrstuvwxyz ") for _ in range(300))} %d";')
out.append('static const char *const msgs[] = {' + ','.join(f'msg{i}' for i in range(N)) + '};')
for i in range(N):
    out.append(f'long f{i}(long x, int depth, int rare);')
for i in range(N):
    body = ' '.join(f'x = x * {random.randint(3, 999)} + {random.randint(1, 99999)}; if (x % {random.randint(2, 97)} == 0) x ^= {random.randint(1, 1 << 30)};' for _ in range(12))
    out.append(f'__attribute__((noinline)) long f{i}(long x, int depth, int rare) {{ int c = 0; Guard g{{&c}}; {body} '
               f'if (depth > 0) {{ if (x % 7 == 100) return x; return f{(i * 7919 + 13) % N}(x, depth - 1, rare) + c; }} '
               f'if (rare) {{ char b[400]; snprintf(b, sizeof b, msgs[{i}], (int)x); throw std::runtime_error(b); }} return x; }}')
out.append('typedef long (*fn)(long, int, int);')
out.append('static fn const fns[] = {' + ','.join(f'f{i}' for i in range(N)) + '};')
out.append(r'''
static volatile sig_atomic_t go;
static void on_usr1(int) { go = 1; }
static long majflt() { struct rusage ru; getrusage(RUSAGE_SELF, &ru); return ru.ru_majflt; }
int main(int argc, char **argv)
{
	int common = 200; /* the common path: a few functions, often */
	long s = 0;
	signal(SIGUSR1, on_usr1);
	for (int r = 0; r < 1000; r++)
		for (int i = 0; i < common; i++)
			s += fns[i](r + i, 0, 0);
	printf("ready %ld\n", s & 1);
	fflush(stdout);
	for (int round = 0; round < 2; round++) {
	while (!go)
		pause();
	go = 0;
	long before = majflt();
	int caught = 0;
	/* the rare path: functions never run before, an exception through 30 frames, a message */
	for (int i = N_FIRST; i < N_FIRST + 40; i++) {
		try {
			/* x chosen so that the deepest frame throws */
			fns[i](i, 30, 1);
		} catch (const std::exception &e) {
			caught++;
			fprintf(stderr, "%.40s\n", e.what());
		}
	}
	printf("rare%d majflt=%ld caught=%d\n", round, majflt() - before, caught);
	fflush(stdout);
	}
	return 0;
}
''')
import sys
open(sys.argv[1], 'w').write('\n'.join(out).replace('N_FIRST', str(N // 2)))
