/* SPDX-License-Identifier: GPL-2.0-or-later */
/* spawn N PROGRAM [ARGS...]: start N copies of PROGRAM as fast as fork
 * and exec go, print "started N" and wait; SIGTERM ends them all. The
 * children are reaped by the kernel (SIGCHLD ignored): wait() for each
 * of tens of thousands would scan the list of children every time. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	long n;
	sigset_t set;
	int sig;

	if (argc < 3 || (n = strtol(argv[1], NULL, 10)) <= 0) {
		fprintf(stderr, "usage: spawn N PROGRAM [ARGS...]\n");
		return 2;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	setpgid(0, 0);
	signal(SIGCHLD, SIG_IGN);
	for (long i = 0; i < n; i++) {
		pid_t p = fork();

		if (p < 0) {
			perror("fork");
			kill(0, SIGKILL);
			return 1;
		}
		if (p == 0) {
			sigprocmask(SIG_UNBLOCK, &set, NULL);
			execv(argv[2], argv + 2);
			_exit(127);
		}
	}
	printf("started %ld\n", n);
	fflush(stdout);
	sigwait(&set, &sig);
	signal(SIGTERM, SIG_IGN);
	kill(0, SIGTERM);
	return 0;
}
