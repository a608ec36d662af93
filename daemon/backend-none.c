/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The none backend: decide and report, change nothing. */
#include <stdio.h>

#include "backend.h"
#include "hashmap.h"
#include "util.h"

struct nstate {
	struct hashmap pids;
	struct hashmap cgroups; /* path (its own copy) -> itself */
};

static int none_probe(const struct backend_env *env, char **ret_reason)
{
	(void)env;
	*ret_reason = NULL;
	return 0;
}

static int none_create(const struct backend_env *env, void **ret_state)
{
	struct nstate *s = calloc(1, sizeof(*s));

	(void)env;
	if (!s)
		return -ENOMEM;
	hashmap_init(&s->pids, hash_int, equal_int);
	hashmap_init(&s->cgroups, hash_string, equal_string);
	*ret_state = s;
	return 0;
}

static void none_destroy(void *state)
{
	struct nstate *s = state;

	char *c;
	size_t cursor = 0;

	if (!s)
		return;
	while ((c = hashmap_steal(&s->cgroups, &cursor)))
		free(c);
	hashmap_done(&s->cgroups);
	hashmap_done(&s->pids);
	free(s);
}

static int none_protect(void *state, const struct protect_target *t)
{
	struct nstate *s = state;
	int r = hashmap_put(&s->pids, INT_TO_KEY(t->pid), (void *)1);

	return r == -EEXIST ? 0 : r;
}

static void none_release(void *state, pid_t pid)
{
	struct nstate *s = state;

	hashmap_remove(&s->pids, INT_TO_KEY(pid));
}

static int none_protect_cgroup(void *state, const char *cgroup, const struct rule_settings *settings)
{
	struct nstate *s = state;
	char *c;
	int r;

	(void)settings;
	if (hashmap_get(&s->cgroups, cgroup))
		return 0;
	c = strdup(cgroup);
	if (!c)
		return -ENOMEM;
	r = hashmap_put(&s->cgroups, c, c);
	if (r < 0)
		free(c);
	return r;
}

static void none_release_cgroup(void *state, const char *cgroup)
{
	struct nstate *s = state;

	free(hashmap_remove(&s->cgroups, cgroup));
}

static int none_reconfigure(void *state, const struct daemon_settings *settings)
{
	(void)state;
	(void)settings;
	return 0;
}

static void none_describe(void *state, char *buf, size_t size)
{
	struct nstate *s = state;

	if (s->cgroups.n_items)
		snprintf(buf, size, "observing only, %zu processes and %zu cgroups would be protected",
			 s->pids.n_items, s->cgroups.n_items);
	else
		snprintf(buf, size, "observing only, %zu processes would be protected", s->pids.n_items);
}

static int none_report_units(void *state, struct backend_unit_report *units, size_t n)
{
	(void)state;
	for (size_t i = 0; i < n; i++) {
		units[i].protected_now = false;
		units[i].blocked = false;
		snprintf(units[i].state, sizeof(units[i].state), "observed only, backend none");
		units[i].mapped = units[i].resident = units[i].locked = BACKEND_FIGURE_UNKNOWN;
	}
	return 0;
}

const struct backend_ops backend_none_ops = {
	.name = "none",
	.cgroup_only = true,
	.observe_only = true,
	.report_units = none_report_units,
	.probe = none_probe,
	.create = none_create,
	.destroy = none_destroy,
	.protect = none_protect,
	.release = none_release,
	.protect_cgroup = none_protect_cgroup,
	.release_cgroup = none_release_cgroup,
	.reconfigure = none_reconfigure,
	.describe = none_describe,
};
