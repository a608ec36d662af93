/* SPDX-License-Identifier: GPL-2.0-or-later */
/* LD_PRELOAD=eg-mlockall.so: the service locks itself, as reviewers
 * suggest instead of a kernel knob ("change the application"): all it
 * maps now and later, each page once it is first touched (MCL_ONFAULT,
 * so not whole files). Needs LimitMEMLOCK=infinity or CAP_IPC_LOCK; a
 * failure is said on stderr (the journal) and the process goes on
 * unlocked, as a real application would. Locks are not inherited across
 * fork() and a preload's constructor runs only at exec, so the library
 * locks again in every forked child (PostgreSQL's backends and nginx's
 * workers are forked, not executed): what an application that wants
 * this has to do too. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <sys/mman.h>

static void lock_all(void)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT))
		fprintf(stderr, "eg-mlockall: mlockall: %s\n", strerror(errno));
}

__attribute__((constructor)) static void eg_mlockall(void)
{
	lock_all();
	pthread_atfork(NULL, NULL, lock_all);
}
