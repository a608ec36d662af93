/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <sys/stat.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>

#include "backend.h"
#include "bus-stats.h"
#include "bus.h"
#include "hashmap.h"
#include "log.h"
#include "manager.h"
#include "units.h"
#include "util.h"

#define RETRY_MIN_USEC (1 * 1000000ULL)
#define RETRY_MAX_USEC (10 * 1000000ULL)
#define CALL_TIMEOUT_USEC (2 * 1000000ULL)

struct bus {
	struct manager *m;
	struct units *units;
	sd_bus *bus;
	sd_bus *dead;		  /* disconnected, dropped from a defer source */
	sd_event_source *retry, *drop;
	uint64_t retry_usec;
	bool said_absent;
};

/* Names on the bus: cgroup, unit and file names are bytes, and sd-bus
 * refuses a string that is not UTF-8 (one odd name would fail the whole
 * reply). Each is passed through utf8_escape_invalid(); the copies live
 * until the reply is built. */
struct bus_names {
	char *copies[8];
	size_t n;
	int err;
};

static const char *bus_name(struct bus_names *bn, const char *s)
{
	int err;
	char *e = utf8_escape_invalid(s, &err);

	if (err < 0 || (e && bn->n == ELEMENTSOF(bn->copies))) {
		free(e);
		bn->err = -ENOMEM;
		return "";
	}
	if (!e)
		return s;
	bn->copies[bn->n++] = e;
	return e;
}

static void bus_names_done(struct bus_names *bn)
{
	for (size_t i = 0; i < bn->n; i++)
		free(bn->copies[i]);
	bn->n = 0;
}

/* Properties. */

static int get_property(sd_bus *bus, const char *path, const char *interface, const char *property,
			sd_bus_message *reply, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	const struct policy *p = manager_policy(b->m);
	struct manager_stats st;

	(void)bus;
	(void)path;
	(void)interface;
	(void)error;
	manager_get_stats(b->m, &st);
	if (streq(property, "Version"))
		return sd_bus_message_append(reply, "s", PROJECT_VERSION);
	if (streq(property, "Backend"))
		return sd_bus_message_append(reply, "s", st.backend);
	if (streq(property, "DryRun"))
		return sd_bus_message_append(reply, "b", st.dry_run);
	if (streq(property, "ProcessesProtected"))
		return sd_bus_message_append(reply, "u", (uint32_t)st.processes_protected);
	if (streq(property, "ExecEvents"))
		return sd_bus_message_append(reply, "t", st.exec_events);
	if (streq(property, "ExitEvents"))
		return sd_bus_message_append(reply, "t", st.exit_events);
	if (streq(property, "Decisions"))
		return sd_bus_message_append(reply, "t", st.decisions);
	if (streq(property, "Overflows"))
		return sd_bus_message_append(reply, "t", st.overflows);
	if (streq(property, "FullRescans"))
		return sd_bus_message_append(reply, "t", st.full_rescans);
	if (streq(property, "BackendErrors"))
		return sd_bus_message_append(reply, "t", st.backend_errors);
	if (streq(property, "LatencyP50USec"))
		return sd_bus_message_append(reply, "u", st.latency_p50_us);
	if (streq(property, "LatencyP99USec"))
		return sd_bus_message_append(reply, "u", st.latency_p99_us);
	if (streq(property, "LatencyMaxUSec"))
		return sd_bus_message_append(reply, "u", st.latency_max_us);
	if (streq(property, "Rules"))
		return sd_bus_message_append(reply, "u", (uint32_t)p->n_rules);
	if (streq(property, "UnitLookup"))
		return sd_bus_message_append(reply, "s", units_state(b->units));
	if (streq(property, "PolicyFiles")) {
		int r = sd_bus_message_open_container(reply, 'a', "s");

		for (size_t i = 0; r >= 0 && i < p->n_files; i++) {
			_cleanup_(bus_names_done) struct bus_names bn = { 0 };
			const char *f = bus_name(&bn, p->files[i]);

			r = bn.err ?: sd_bus_message_append(reply, "s", f);
		}
		return r < 0 ? r : sd_bus_message_close_container(reply);
	}
	return -ENOENT;
}

/* Per unit: the tracked processes grouped by unit (by cgroup outside
 * units), as the lock backend groups them. */

/* Reading every protected process's smaps made status take seconds
 * with thousands of processes (12-23 s at 10,000, with exec decisions
 * waiting behind it). Processes of one unit running one program map the
 * same text: the figures come from one process per distinct executable,
 * at most SAMPLES_PER_GROUP executables per unit and SMAPS_PER_CALL
 * smaps reads per call (execguardctl(1)). */
#define SAMPLES_PER_GROUP 16
#define PIDS_PER_SAMPLE 3 /* stand-ins when the first has exited */
#define SMAPS_PER_CALL 256
/* Without a memory controller on cgroup2, a unit's major faults are its
 * processes' own (/proc/PID/stat): at most this many reads per call. */
#define STAT_READS_PER_CALL 2048

struct exe_sample {
	char *exe;
	pid_t pids[PIDS_PER_SAMPLE];
	size_t n_pids_kept, n_pids;
};

struct group {
	char *key, *cgroup, *source;
	bool is_unit;
	pid_t *pids;
	size_t n_pids;
	struct exe_sample samples[SAMPLES_PER_GROUP];
	size_t n_samples;
	size_t n_unsampled; /* processes of executables past the cap */
};

struct groups {
	struct group *g;
	size_t n;
	struct hashmap index; /* key -> index + 1 into g */
	size_t smaps_left;    /* the per-call budgets of smaps reads */
	size_t stat_left;     /* and of /proc/PID/stat reads */
};

static void groups_init(struct groups *gs)
{
	*gs = (struct groups){ .smaps_left = SMAPS_PER_CALL, .stat_left = STAT_READS_PER_CALL };
	hashmap_init(&gs->index, hash_string, equal_string);
}

static void groups_done(struct groups *gs)
{
	for (size_t i = 0; i < gs->n; i++) {
		free(gs->g[i].key);
		free(gs->g[i].cgroup);
		free(gs->g[i].source);
		free(gs->g[i].pids);
		for (size_t k = 0; k < gs->g[i].n_samples; k++)
			free(gs->g[i].samples[k].exe);
	}
	free(gs->g);
	hashmap_done(&gs->index);
	*gs = (struct groups){ 0 };
}

static struct group *group_find(struct groups *gs, const char *key)
{
	uintptr_t i = (uintptr_t)hashmap_get(&gs->index, key);

	return i ? &gs->g[i - 1] : NULL;
}

static int group_sample(struct group *g, const char *exe, pid_t pid)
{
	struct exe_sample *s = NULL;

	exe = exe ?: "?";
	for (size_t i = 0; i < g->n_samples && !s; i++)
		if (streq(g->samples[i].exe, exe))
			s = &g->samples[i];
	if (!s) {
		if (g->n_samples == SAMPLES_PER_GROUP) {
			g->n_unsampled++;
			return 0;
		}
		s = &g->samples[g->n_samples];
		*s = (struct exe_sample){ .exe = strdup(exe) };
		if (!s->exe)
			return -ENOMEM;
		g->n_samples++;
	}
	if (s->n_pids_kept < PIDS_PER_SAMPLE)
		s->pids[s->n_pids_kept++] = pid;
	s->n_pids++;
	return 0;
}

/* The unit's own cgroup: the process's cgroup cut after the component
 * named like the unit. */
static char *unit_cgroup(const char *cgroup, const char *unit)
{
	size_t ul = strlen(unit);

	for (const char *p = cgroup; (p = strstr(p, unit)); p++)
		if (p > cgroup && p[-1] == '/' && (p[ul] == '/' || p[ul] == '\0'))
			return strndup(cgroup, (size_t)(p - cgroup) + ul);
	return strdup(cgroup);
}

static int collect_process(const struct manager_process_info *p, void *userdata)
{
	struct groups *gs = userdata;
	const char *key = p->unit ? p->unit : p->cgroup ? p->cgroup : "-";
	struct group *g = group_find(gs, key);
	pid_t *pids;

	if (!g) {
		struct group *n = realloc(gs->g, (gs->n + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		gs->g = n;
		/* The index holds positions, not pointers: realloc moves. */
		g = &gs->g[gs->n++];
		*g = (struct group){
			.key = strdup(key),
			.cgroup = p->unit && p->cgroup ? unit_cgroup(p->cgroup, p->unit) :
							 strdup(p->cgroup ? p->cgroup : "/"),
			.source = strdup(p->source ? p->source : "?"),
			.is_unit = p->unit != NULL,
		};
		if (!g->key || !g->cgroup || !g->source)
			return -ENOMEM;
		if (hashmap_put(&gs->index, g->key, (void *)(uintptr_t)gs->n) < 0)
			return -ENOMEM;
	}
	if ((g->n_pids & (g->n_pids - 1)) == 0) { /* grow at powers of two */
		pids = realloc(g->pids, (g->n_pids ? 2 * g->n_pids : 1) * sizeof(pid_t));
		if (!pids)
			return -ENOMEM;
		g->pids = pids;
	}
	g->pids[g->n_pids++] = p->pid;
	return group_sample(g, p->exe, p->pid);
}

struct figures {
	uint64_t mapped, resident, locked, majflt, breaches;
};

/* A file range, to count each once. */
struct range_key {
	uint64_t dev, ino, offset;
};

static uint64_t hash_range(const void *key)
{
	const struct range_key *k = key;

	return (k->dev * 0x9e3779b97f4a7c15ULL) ^ (k->ino * 0xc2b2ae3d27d4eb4fULL) ^ k->offset;
}

static bool equal_range(const void *a, const void *b)
{
	const struct range_key *x = a, *y = b;

	return x->dev == y->dev && x->ino == y->ino && x->offset == y->offset;
}

/* The exec mappings of one process standing for sample s: the first of
 * its kept processes whose smaps can still be read. */
static int read_sample(struct bus *b, struct groups *gs, const struct exe_sample *s,
		       struct text_mappings *tm)
{
	for (size_t i = 0; i < s->n_pids_kept && gs->smaps_left; i++) {
		gs->smaps_left--;
		if (read_smaps_exec(manager_proc_fd(b->m), s->pids[i], tm) >= 0)
			return 0;
	}
	return -ESRCH;
}

/* Mapped and resident text of a group from smaps, each file range once. */
static void smaps_figures(struct bus *b, struct groups *gs, const struct group *g, struct figures *f)
{
	struct hashmap seen;
	struct range_key *keys = NULL;
	size_t n_keys = 0, cap = 0;

	f->mapped = f->resident = 0;
	hashmap_init(&seen, hash_range, equal_range);
	for (size_t i = 0; i < g->n_samples; i++) {
		struct text_mappings tm;

		if (read_sample(b, gs, &g->samples[i], &tm) < 0)
			continue;
		/* Keys live in one array, grown before any is indexed. */
		if (n_keys + tm.n > cap) {
			struct range_key *n;

			if (n_keys) {
				/* Rehash into a larger array: keys must not move. */
				hashmap_done(&seen);
				hashmap_init(&seen, hash_range, equal_range);
			}
			cap = 2 * (n_keys + tm.n);
			n = realloc(keys, cap * sizeof(*keys));
			if (!n) {
				text_mappings_done(&tm);
				break;
			}
			keys = n;
			for (size_t k = 0; k < n_keys; k++)
				(void)hashmap_put(&seen, &keys[k], &keys[k]);
		}
		for (size_t k = 0; k < tm.n; k++) {
			const struct text_mapping *t = &tm.items[k];

			keys[n_keys] = (struct range_key){ t->dev, t->ino, t->offset };
			if (hashmap_get(&seen, &keys[n_keys]))
				continue;
			if (hashmap_put(&seen, &keys[n_keys], &keys[n_keys]) < 0)
				break;
			n_keys++;
			f->mapped += t->size;
			f->resident += t->rss;
		}
		text_mappings_done(&tm);
	}
	hashmap_done(&seen);
	free(keys);
}

/* The figures of a group: the backend's own where it keeps them, else
 * from the processes (sampled, see above). */
static void group_figures(struct bus *b, struct groups *gs, const struct group *g,
			  const struct backend_unit_report *rep, struct figures *f)
{
	const char *key = NULL;

	*f = (struct figures){ .mapped = rep->mapped, .resident = rep->resident, .locked = rep->locked };
	if (rep->mapped == BACKEND_FIGURE_UNKNOWN || rep->resident == BACKEND_FIGURE_UNKNOWN)
		smaps_figures(b, gs, g, f);
	f->breaches = read_cgroup_breaches(manager_cgroup_root_fd(b->m), g->cgroup);
	f->majflt = read_cgroup_majflt(manager_cgroup_root_fd(b->m), g->cgroup, &key);
	if (f->majflt == STAT_UNKNOWN) {
		/* No memory controller on cgroup2: the protected processes' own,
		 * within the call's budget of reads (else unknown, not a part). */
		if (g->n_pids > gs->stat_left)
			return;
		gs->stat_left -= g->n_pids;
		f->majflt = 0;
		for (size_t i = 0; i < g->n_pids; i++) {
			uint64_t v = read_pid_majflt(manager_proc_fd(b->m), g->pids[i]);

			if (v != STAT_UNKNOWN)
				f->majflt += v;
		}
	}
}

/* Whether the group is protected now, and the reason in words: the
 * backend's, with the policy that asked for it. */
static bool group_state(struct bus *b, const struct group *g, const struct backend_unit_report *rep,
			char *buf, size_t size)
{
	if (manager_dry_run(b->m)) {
		snprintf(buf, size, "dry run: would protect (policy %s)", g->source);
		return false;
	}
	if (rep->blocked) {
		snprintf(buf, size, "%s", rep->state);
		return false;
	}
	snprintf(buf, size, "%s (policy %s)", rep->state, g->source);
	return rep->protected_now;
}

struct section_rows {
	sd_bus_message *reply;
	struct groups *gs;
	const char *backend;
};

static int append_section_row(const char *unit, const struct rule_settings *s, const char *source,
			      void *userdata)
{
	struct section_rows *sr = userdata;
	char why[512];

	if (group_find(sr->gs, unit))
		return 0;
	if (s->protect > 0)
		snprintf(why, sizeof(why), "no process running (Protect=yes at %s)", strna(source));
	else if (s->protect == 0)
		snprintf(why, sizeof(why), "Protect=no at %s", strna(source));
	else
		snprintf(why, sizeof(why), "section without Protect= at %s", strna(source));
	_cleanup_(bus_names_done) struct bus_names bn = { 0 };
	const char *u = bus_name(&bn, unit), *w = bus_name(&bn, why);

	return bn.err ?: sd_bus_message_append(sr->reply, "(sssbsuttttt)", u, "", sr->backend, 0, w, 0,
					      STAT_UNKNOWN, STAT_UNKNOWN, STAT_UNKNOWN, STAT_UNKNOWN,
					      STAT_UNKNOWN);
}

static int method_list_units(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	_cleanup_free_ struct backend_unit_report *reps = NULL;
	const struct backend_ops *ops;
	struct groups gs;
	void *state;
	int r;

	(void)error;
	groups_init(&gs);
	r = manager_foreach_process(b->m, collect_process, &gs);
	if (r < 0)
		goto out;
	reps = calloc(gs.n ?: 1, sizeof(*reps));
	if (!reps) {
		r = -ENOMEM;
		goto out;
	}
	for (size_t i = 0; i < gs.n; i++)
		reps[i] = (struct backend_unit_report){ .key = gs.g[i].key, .cgroup = gs.g[i].cgroup };
	ops = manager_backend(b->m, &state);
	r = ops->report_units(state, reps, gs.n);
	if (r < 0)
		goto out;
	r = sd_bus_message_new_method_return(msg, &reply);
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(sssbsuttttt)");
	for (size_t i = 0; r >= 0 && i < gs.n; i++) {
		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const char *key, *cgroup, *w;
		struct figures f;
		char why[512];
		bool on;

		group_figures(b, &gs, &gs.g[i], &reps[i], &f);
		on = group_state(b, &gs.g[i], &reps[i], why, sizeof(why));
		key = bus_name(&bn, gs.g[i].key);
		cgroup = bus_name(&bn, gs.g[i].cgroup);
		w = bus_name(&bn, why);
		r = bn.err ?: sd_bus_message_append(reply, "(sssbsuttttt)", key, cgroup, ops->name, on, w,
						   (uint32_t)gs.g[i].n_pids, f.mapped, f.resident, f.locked,
						   f.majflt, f.breaches);
	}
	if (r >= 0) {
		struct section_rows sr = { reply, &gs, ops->name };

		r = units_foreach_section(b->units, append_section_row, &sr);
	}
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
out:
	groups_done(&gs);
	return r;
}

/* Libraries: every executable file the protected processes map, the
 * most shared first. */

struct lib {
	uint64_t dev, ino;
	char *path;
	uint32_t n_units, n_pids;
	uint64_t mapped, resident, locked;
	const char *state;
	/* While walking one sampled process. */
	size_t cur_sample, cur_group;
	uint64_t cur_size, cur_rss;
};

struct libs {
	struct lib *l;
	size_t n;
	struct hashmap index; /* (dev, ino) -> index + 1 into l */
};

static uint64_t hash_file(const void *key)
{
	const uint64_t *k = key;

	return (k[0] * 0x9e3779b97f4a7c15ULL) ^ k[1];
}

static bool equal_file(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] == y[0] && x[1] == y[1];
}

static void lib_flush(struct lib *l)
{
	if (l->cur_size > l->mapped)
		l->mapped = l->cur_size;
	if (l->cur_rss > l->resident)
		l->resident = l->cur_rss;
	l->cur_size = l->cur_rss = 0;
}

/* One mapping of the process standing for a sample of n_pids processes
 * (sample_id: unique over the call). */
static int libs_add(struct libs *ls, size_t group, size_t sample_id, size_t n_pids,
		    const struct text_mapping *t)
{
	uint64_t key[2] = { t->dev, t->ino };
	uintptr_t i = (uintptr_t)hashmap_get(&ls->index, key);
	struct lib *l;

	if (!i) {
		struct lib *n = realloc(ls->l, (ls->n + 1) * sizeof(*n));

		if (!n)
			return -ENOMEM;
		/* The index keys point into l[]: rebuilt after it moved. */
		if (n != ls->l) {
			hashmap_done(&ls->index);
			hashmap_init(&ls->index, hash_file, equal_file);
			for (size_t k = 0; k < ls->n; k++)
				if (hashmap_put(&ls->index, &n[k].dev, (void *)(uintptr_t)(k + 1)) < 0)
					return -ENOMEM;
		}
		ls->l = n;
		l = &ls->l[ls->n++];
		*l = (struct lib){ .dev = t->dev, .ino = t->ino, .path = strdup(t->path ?: "?"),
				   .locked = STAT_UNKNOWN, .state = "mapped", .cur_group = SIZE_MAX,
				   .cur_sample = SIZE_MAX };
		if (!l->path || hashmap_put(&ls->index, &l->dev, (void *)(uintptr_t)ls->n) < 0)
			return -ENOMEM;
	} else {
		l = &ls->l[i - 1];
	}
	if (l->cur_sample != sample_id) {
		lib_flush(l);
		l->cur_sample = sample_id;
		l->n_pids += (uint32_t)n_pids;
		if (l->cur_group != group) {
			l->cur_group = group;
			l->n_units++;
		}
	}
	l->cur_size += t->size;
	l->cur_rss += t->rss;
	return 0;
}

static int cmp_lib(const void *a, const void *b)
{
	const struct lib *x = a, *y = b;

	if (x->n_units != y->n_units)
		return x->n_units < y->n_units ? 1 : -1;
	if (x->n_pids != y->n_pids)
		return x->n_pids < y->n_pids ? 1 : -1;
	if (x->resident != y->resident)
		return x->resident < y->resident ? 1 : -1;
	return strcmp(x->path, y->path);
}

static int method_list_libraries(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct backend_file_report *fs = NULL;
	const struct backend_ops *ops;
	struct groups gs;
	struct libs ls = { 0 };
	size_t n_fs = 0;
	void *state;
	int r;

	(void)error;
	groups_init(&gs);
	hashmap_init(&ls.index, hash_file, equal_file);
	ops = manager_backend(b->m, &state);
	if (ops->report_files) {
		r = ops->report_files(state, &fs, &n_fs);
		if (r < 0)
			goto out;
		ls.l = calloc(n_fs ?: 1, sizeof(*ls.l));
		if (!ls.l) {
			r = -ENOMEM;
			goto out;
		}
		for (size_t i = 0; i < n_fs; i++)
			ls.l[ls.n++] = (struct lib){
				.path = TAKE_PTR(fs[i].path),
				.n_units = fs[i].n_units,
				.n_pids = fs[i].n_pids,
				.mapped = fs[i].mapped,
				.resident = fs[i].resident,
				.locked = fs[i].locked,
				.state = fs[i].state,
			};
	} else {
		size_t sample_id = 0;

		r = manager_foreach_process(b->m, collect_process, &gs);
		if (r < 0)
			goto out;
		for (size_t g = 0; g < gs.n; g++)
			for (size_t k = 0; k < gs.g[g].n_samples; k++, sample_id++) {
				const struct exe_sample *smp = &gs.g[g].samples[k];
				struct text_mappings tm;

				if (read_sample(b, &gs, smp, &tm) < 0)
					continue;
				for (size_t m = 0; m < tm.n && r >= 0; m++)
					r = libs_add(&ls, g, sample_id, smp->n_pids, &tm.items[m]);
				text_mappings_done(&tm);
				if (r < 0)
					goto out;
			}
		for (size_t i = 0; i < ls.n; i++)
			lib_flush(&ls.l[i]);
	}
	if (ls.n)
		qsort(ls.l, ls.n, sizeof(*ls.l), cmp_lib);
	r = sd_bus_message_new_method_return(msg, &reply);
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(suuttts)");
	for (size_t i = 0; r >= 0 && i < ls.n; i++) {
		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const char *path = bus_name(&bn, ls.l[i].path);

		r = bn.err ?: sd_bus_message_append(reply, "(suuttts)", path, ls.l[i].n_units,
						   ls.l[i].n_pids, ls.l[i].mapped, ls.l[i].resident,
						   ls.l[i].locked, ls.l[i].state);
	}
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
out:
	for (size_t i = 0; i < ls.n; i++)
		free(ls.l[i].path);
	free(ls.l);
	hashmap_done(&ls.index);
	backend_file_reports_free(fs, n_fs);
	groups_done(&gs);
	return r;
}

/* Explain: root, or the owner of the process (it reveals the exe). */
static int may_explain(struct bus *b, sd_bus_message *msg, pid_t pid, sd_bus_error *error)
{
	_cleanup_(sd_bus_creds_unrefp) sd_bus_creds *c = NULL;
	char name[16];
	struct stat st;
	uid_t uid;
	int r;

	r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_UID | SD_BUS_CREDS_AUGMENT, &c);
	if (r < 0)
		return r;
	r = sd_bus_creds_get_euid(c, &uid);
	if (r < 0)
		r = sd_bus_creds_get_uid(c, &uid);
	if (r < 0)
		return r;
	if (uid == 0)
		return 0;
	snprintf(name, sizeof(name), "%d", (int)pid);
	if (fstatat(manager_proc_fd(b->m), name, &st, 0) < 0)
		return sd_bus_error_setf(error, EXECGUARD_BUS_ERROR_NO_PROCESS, "No process %d", (int)pid);
	if (st.st_uid != uid)
		return sd_bus_error_setf(error, SD_BUS_ERROR_ACCESS_DENIED,
					 "Process %d is not yours: only root may explain it", (int)pid);
	return 0;
}

static int method_explain(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	struct manager_explanation e;
	char section[128];
	uint32_t pid;
	int r;

	r = sd_bus_message_read(msg, "u", &pid);
	if (r < 0)
		return r;
	if (pid == 0 || pid > INT32_MAX)
		return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS, "Invalid PID %u", pid);
	r = may_explain(b, msg, (pid_t)pid, error);
	if (r < 0)
		return r;
	r = manager_explain(b->m, (pid_t)pid, &e);
	if (r == -ESRCH || r == -ENOENT)
		return sd_bus_error_setf(error, EXECGUARD_BUS_ERROR_NO_PROCESS,
					 "No process %u, or it has no cgroup2 path (kernel thread?)", pid);
	if (r < 0)
		return r;
	rule_settings_format(&e.unit_section, section, sizeof(section));
	r = sd_bus_message_new_method_return(msg, &reply);
	if (r >= 0) {
		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const char *unit = bus_name(&bn, strempty(e.unit)), *cgroup = bus_name(&bn, strempty(e.cgroup));
		const char *exe = bus_name(&bn, strempty(e.exe));
		const char *source = bus_name(&bn, strempty(e.decision.protect_source));
		const char *section_source = bus_name(&bn, strempty(e.unit_section_source));
		/* No source but a text: systemd is being asked (execguardctl(1)). */
		const char *sect = bus_name(&bn, e.unit_section_source ? section :
						 e.unit_section_pending ? "not known yet: systemd is being asked" : "");

		r = bn.err ?: sd_bus_message_append(reply, "ssssbbsss", unit, cgroup, exe,
						   manager_backend(b->m, NULL)->name, e.decision.protect,
						   e.tracked, source, sect, section_source);
	}
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(ssus)");
	for (size_t i = 0; r >= 0 && i < e.decision.n_matched; i++) {
		const struct rule *rule = e.decision.matched[i];
		char s[128];

		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const char *name = bus_name(&bn, rule->name), *file = bus_name(&bn, rule->file);

		rule_settings_format(&rule->settings, s, sizeof(s));
		r = bn.err ?: sd_bus_message_append(reply, "(ssus)", name, file, rule->line, s);
	}
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	manager_explanation_done(&e);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
	return r;
}

static int method_reload(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;
	const struct policy *p;
	struct policy rejected;
	char summary[128];
	int r;

	/* Unit files may have changed too: read them again with the rest. */
	units_flush(b->units);
	r = manager_reload(b->m, &rejected);
	if (r < 0) {
		char *text = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&text, &len);

		if (!f) {
			policy_done(&rejected);
			return -ENOMEM;
		}
		policy_print_errors(&rejected, f);
		fprintf(f, "%zu error%s; the previous policy stays in force", rejected.n_errors,
			rejected.n_errors == 1 ? "" : "s");
		fclose(f);
		policy_done(&rejected);
		if (!text)
			return -ENOMEM;
		{
			_cleanup_free_ char *escaped = utf8_escape_invalid_text(text, &r);

			if (r < 0) {
				free(text);
				return r;
			}
			r = sd_bus_error_set(error, EXECGUARD_BUS_ERROR_REJECTED, escaped ?: text);
		}
		free(text);
		return r;
	}
	p = manager_policy(b->m);
	snprintf(summary, sizeof(summary), "policy reloaded: %zu rule%s from %zu file%s", p->n_rules,
		 p->n_rules == 1 ? "" : "s", p->n_files, p->n_files == 1 ? "" : "s");
	return sd_bus_reply_method_return(msg, "s", summary);
}

#define PROP(name, sig) SD_BUS_PROPERTY(name, sig, get_property, 0, 0)

static const sd_bus_vtable manager_vtable[] = {
	SD_BUS_VTABLE_START(0),
	SD_BUS_PROPERTY("Version", "s", get_property, 0, SD_BUS_VTABLE_PROPERTY_CONST),
	PROP("Backend", "s"),
	PROP("DryRun", "b"),
	PROP("ProcessesProtected", "u"),
	PROP("ExecEvents", "t"),
	PROP("ExitEvents", "t"),
	PROP("Decisions", "t"),
	PROP("Overflows", "t"),
	PROP("FullRescans", "t"),
	PROP("BackendErrors", "t"),
	PROP("LatencyP50USec", "u"),
	PROP("LatencyP99USec", "u"),
	PROP("LatencyMaxUSec", "u"),
	PROP("Rules", "u"),
	PROP("PolicyFiles", "as"),
	PROP("UnitLookup", "s"),
	SD_BUS_METHOD_WITH_NAMES("ListUnits", "", , "a(sssbsuttttt)",
				 SD_BUS_PARAM(units), method_list_units, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("ListLibraries", "", , "a(suuttts)", SD_BUS_PARAM(libraries),
				 method_list_libraries, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_METHOD_WITH_NAMES("Explain", "u", SD_BUS_PARAM(pid), "ssssbbsssa(ssus)",
				 SD_BUS_PARAM(unit) SD_BUS_PARAM(cgroup) SD_BUS_PARAM(exe)
					 SD_BUS_PARAM(backend) SD_BUS_PARAM(protect)
					 SD_BUS_PARAM(tracked) SD_BUS_PARAM(decided_by)
					 SD_BUS_PARAM(unit_section) SD_BUS_PARAM(unit_section_source)
					 SD_BUS_PARAM(rules),
				 method_explain, SD_BUS_VTABLE_UNPRIVILEGED),
	/* No UNPRIVILEGED flag: sd-bus asks for CAP_SYS_ADMIN. */
	SD_BUS_METHOD_WITH_NAMES("Reload", "", , "s", SD_BUS_PARAM(summary), method_reload, 0),
	SD_BUS_VTABLE_END
};

/* The connection and its life. */

static int bus_connect(struct bus *b);

static void arm_retry(struct bus *b)
{
	uint64_t now;

	sd_event_now(manager_event(b->m), CLOCK_MONOTONIC, &now);
	sd_event_source_set_time(b->retry, now + b->retry_usec);
	sd_event_source_set_enabled(b->retry, SD_EVENT_ONESHOT);
	b->retry_usec = b->retry_usec * 2 > RETRY_MAX_USEC ? RETRY_MAX_USEC : b->retry_usec * 2;
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct bus *b = userdata;

	(void)s;
	(void)usec;
	if (bus_connect(b) < 0)
		arm_retry(b);
	return 0;
}

static int on_drop(sd_event_source *s, void *userdata)
{
	struct bus *b = userdata;

	(void)s;
	if (b->dead) {
		sd_bus_detach_event(b->dead);
		sd_bus_close(b->dead);
		b->dead = sd_bus_unref(b->dead);
	}
	return 0;
}

static int on_filter(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct bus *b = userdata;

	(void)error;
	if (!sd_bus_message_is_signal(msg, "org.freedesktop.DBus.Local", "Disconnected") || !b->bus)
		return 0;
	log_event(LOG_WARNING, MID_BUS_LOST, NULL,
		  "lost the system bus: protection goes on, without the D-Bus interface and new unit lookups; reconnecting");
	units_set_bus(b->units, NULL);
	b->dead = TAKE_PTR(b->bus);
	sd_event_source_set_enabled(b->drop, SD_EVENT_ONESHOT);
	b->retry_usec = RETRY_MIN_USEC;
	b->said_absent = true;
	arm_retry(b);
	return 0;
}

static int on_name(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	const sd_bus_error *e = sd_bus_message_get_error(msg);

	(void)userdata;
	(void)error;
	if (e)
		log_event(LOG_ERR, MID_BUS, NULL,
			  "cannot own %s on the system bus: %s (another execguardd? bus policy %s not installed?)",
			  EXECGUARD_BUS_NAME, e->message ?: e->name, "org.execguard.Manager1.conf");
	else
		log_event(LOG_INFO, MID_BUS_NAME, NULL, "on the system bus as %s", EXECGUARD_BUS_NAME);
	return 0;
}

static int bus_connect(struct bus *b)
{
	sd_bus *bus = NULL;
	int r;

	r = sd_bus_open_system_with_description(&bus, "execguardd");
	if (r < 0)
		goto fail;
	sd_bus_set_method_call_timeout(bus, CALL_TIMEOUT_USEC);
	if ((r = sd_bus_add_filter(bus, NULL, on_filter, b)) < 0 ||
	    (r = sd_bus_add_object_vtable(bus, NULL, EXECGUARD_BUS_PATH, EXECGUARD_BUS_INTERFACE,
					  manager_vtable, b)) < 0 ||
	    (r = sd_bus_request_name_async(bus, NULL, EXECGUARD_BUS_NAME, 0, on_name, b)) < 0 ||
	    (r = sd_bus_attach_event(bus, manager_event(b->m), SD_EVENT_PRIORITY_NORMAL)) < 0)
		goto fail;
	b->bus = bus;
	if (b->said_absent)
		log_event(LOG_NOTICE, MID_BUS_BACK, NULL, "connected to the system bus again");
	b->said_absent = false;
	b->retry_usec = RETRY_MIN_USEC;
	r = units_set_bus(b->units, bus);
	if (r < 0)
		log_warning_errno(r, "cannot watch systemd on the bus: %m");
	return 0;
fail:
	sd_bus_unref(bus);
	if (!b->said_absent) {
		b->said_absent = true;
		log_event(LOG_NOTICE, MID_BUS, NULL,
			  "no system bus (%s): working without the D-Bus interface and unit [X-ExecGuard] lookups; retrying in the background",
			  strerror(-r));
	}
	return r;
}

int bus_new(struct manager *m, struct units *u, struct bus **ret)
{
	struct bus *b = calloc(1, sizeof(*b));
	int r;

	if (!b)
		return -ENOMEM;
	b->m = m;
	b->units = u;
	b->retry_usec = RETRY_MIN_USEC;
	r = sd_event_add_time(manager_event(m), &b->retry, CLOCK_MONOTONIC, UINT64_MAX, 100000,
			      on_retry, b);
	if (r >= 0)
		r = sd_event_add_defer(manager_event(m), &b->drop, on_drop, b);
	if (r < 0) {
		bus_free(b);
		return r;
	}
	sd_event_source_set_enabled(b->retry, SD_EVENT_OFF);
	sd_event_source_set_enabled(b->drop, SD_EVENT_OFF);
	if (bus_connect(b) < 0)
		arm_retry(b);
	*ret = b;
	return 0;
}

struct bus *bus_free(struct bus *b)
{
	if (!b)
		return NULL;
	if (b->units)
		units_set_bus(b->units, NULL);
	if (b->bus) {
		sd_bus_detach_event(b->bus);
		b->bus = sd_bus_flush_close_unref(b->bus);
	}
	on_drop(NULL, b);
	sd_event_source_unref(b->retry);
	sd_event_source_unref(b->drop);
	free(b);
	return NULL;
}
