/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Repeat the OOM-fallback run of the memory.exec_protect selftests (N
 * tasks through 8 MiB of text at once in a cgroup with a small
 * memory.max) and count the runs in which a task was OOM-killed,
 * protected and unprotected. Built by bench/fallback-oom.sh against the
 * patched tree's selftest source, #include'd so that its helpers are in
 * scope, with BIG_LIMIT and FALLBACK_TASK_ROOM set by the script;
 * runs in the VM.
 *
 * Usage: fallback-oom RUNS MAPPERS
 */
#define main selftest_main
#include <test_exec_protect.c>	/* the copy in the work directory */
#undef main

/* Reclaim work per run, from the parent's (hierarchical) memory.stat */
static const char *const stat_keys[] = {
	"pgscan ", "pgsteal ", "pgrefill ", "pgactivate ", "pgdeactivate ",
	"workingset_refault_file ",
};
#define NR_STAT_KEYS (sizeof(stat_keys) / sizeof(stat_keys[0]))

static void read_stats(const char *cg, long *v)
{
	for (size_t k = 0; k < NR_STAT_KEYS; k++)
		v[k] = cg_read_key_long(cg, "memory.stat", stat_keys[k]);
}

int main(int argc, char **argv)
{
	long before[NR_STAT_KEYS], after[NR_STAT_KEYS], work[2][NR_STAT_KEYS] = { { 0 } };
	char root[PATH_MAX], lru_gen[64] = "", *parent;
	long oom[2] = { 0 }, failed[2] = { 0 }, ms[2] = { 0 };
	struct fallback_result res;
	int runs, nr;

	if (argc != 3)
		ksft_exit_fail_msg("usage: %s RUNS MAPPERS\n", argv[0]);
	runs = atoi(argv[1]);
	nr = atoi(argv[2]);
	if (runs < 1 || nr < 1)
		ksft_exit_fail_msg("bad arguments\n");
	page_size = sysconf(_SC_PAGESIZE);
	if (cg_find_unified_root(root, sizeof(root), &nsdelegate))
		ksft_exit_skip("cgroup v2 isn't mounted\n");
	if (cg_read_strstr(root, "cgroup.subtree_control", "memory") &&
	    cg_write(root, "cgroup.subtree_control", "+memory"))
		ksft_exit_skip("Failed to set memory controller\n");
	if (read_text("/sys/kernel/mm/lru_gen/enabled", lru_gen, sizeof(lru_gen)) > 0)
		mglru = strtol(lru_gen, NULL, 16) != 0;
	parent = create_parent(root);
	if (!parent || file_create(BIG_FILE, BIG_SIZE))
		ksft_exit_fail_msg("setup failed\n");
	for (int i = 0; i < runs; i++)
		for (int on = 0; on < 2; on++) {
			read_stats(parent, before);
			if (fallback_run(parent, on, nr, false, &res))
				ksft_exit_fail_msg("run failed\n");
			read_stats(parent, after);
			for (size_t k = 0; k < NR_STAT_KEYS; k++)
				work[on][k] += after[k] - before[k];
			oom[on] += res.oom_kill > 0;
			failed[on] += res.failed > 0;
			ms[on] += res.ms;
		}
	printf("RESULT lru=%s mappers=%d limit=%s+%dK/task runs=%d unprotected_oom_runs=%ld unprotected_failed_runs=%ld unprotected_avg_ms=%ld protected_oom_runs=%ld protected_failed_runs=%ld protected_avg_ms=%ld\n",
	       mglru ? "mglru" : "classic", nr, BIG_LIMIT, FALLBACK_TASK_ROOM >> 10, runs, oom[0], failed[0], ms[0] / runs,
	       oom[1], failed[1], ms[1] / runs);
	for (int on = 0; on < 2; on++) {
		printf("STATS %s avg per run:", on ? "protected" : "unprotected");
		for (size_t k = 0; k < NR_STAT_KEYS; k++)
			printf(" %.*s=%ld", (int)strlen(stat_keys[k]) - 1, stat_keys[k],
			       work[on][k] / runs);
		printf("\n");
	}
	unlink(BIG_FILE);
	cg_destroy(parent);
	return 0;
}
