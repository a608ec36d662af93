/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ListUnits and ListLibraries: the protected processes grouped by unit,
 * their figures read from /proc and cgroupfs within per-call budgets,
 * one unit per turn of the event loop. */
#include <stdio.h>
#include <sys/stat.h>

#include "backend.h"
#include "bus-stats.h"
#include "bus-status.h"
#include "bus-strings.h"
#include "cgroup.h"
#include "hashmap.h"
#include "log.h"
#include "manager-view.h"
#include "textfault.h"
#include "units.h"
#include "util.h"

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
	const char *source_kind; /* static: "policy", "drop-in", "default" */
	bool is_unit;
	pid_t *pids;
	size_t n_pids;
	struct exe_sample samples[SAMPLES_PER_GROUP];
	size_t n_samples;
	size_t n_unsampled; /* processes of executables past the cap */
	bool pushed;	    /* protected as a whole: its processes read from cgroupfs */
	bool filled;	    /* and read already */
};

struct groups {
	struct group *g;
	size_t n;
	struct hashmap index; /* key -> index + 1 into g */
	/* Who asks: a caller other than root sees its own processes only
	 * (bus_may_see()), and no row without one. */
	bool restricted;
	uid_t viewer;
	int proc_fd;
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

/* The group of key, made with what the first of its members says. */
static struct group *group_get(struct groups *gs, const char *key, const char *cgroup, const char *unit,
			       const char *source, const char *source_kind)
{
	struct group *g = group_find(gs, key);

	if (!g) {
		struct group *n = realloc(gs->g, (gs->n + 1) * sizeof(*n));

		if (!n)
			return NULL;
		gs->g = n;
		/* The index holds positions, not pointers: realloc moves. */
		g = &gs->g[gs->n++];
		*g = (struct group){
			.key = strdup(key),
			.cgroup = unit && cgroup ? cgroup_unit_root(cgroup, unit) : strdup(cgroup ? cgroup : "/"),
			.source = strdup(source ? source : "?"),
			.source_kind = source_kind ?: "default",
			.is_unit = unit != NULL,
		};
		if (!g->key || !g->cgroup || !g->source)
			return NULL;
		if (hashmap_put(&gs->index, g->key, (void *)(uintptr_t)gs->n) < 0)
			return NULL;
	}
	return g;
}

static int group_add_pid(struct group *g, pid_t pid, const char *exe)
{
	pid_t *pids;

	if ((g->n_pids & (g->n_pids - 1)) == 0) { /* grow at powers of two */
		pids = realloc(g->pids, (g->n_pids ? 2 * g->n_pids : 1) * sizeof(pid_t));
		if (!pids)
			return -ENOMEM;
		g->pids = pids;
	}
	g->pids[g->n_pids++] = pid;
	return group_sample(g, exe, pid);
}

int bus_process_owner(int proc_fd, pid_t pid, uid_t *ret)
{
	char name[16];
	struct stat st;

	snprintf(name, sizeof(name), "%d", (int)pid);
	if (fstatat(proc_fd, name, &st, 0) < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	*ret = st.st_uid;
	return 0;
}

bool bus_may_see(int proc_fd, uid_t viewer, pid_t pid)
{
	uid_t owner;

	return viewer == 0 || (bus_process_owner(proc_fd, pid, &owner) >= 0 && owner == viewer);
}

int bus_caller_uid(sd_bus_message *msg, uid_t *ret)
{
	_cleanup_(sd_bus_creds_unrefp) sd_bus_creds *c = NULL;
	int r;

	r = sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID | SD_BUS_CREDS_UID | SD_BUS_CREDS_AUGMENT, &c);
	if (r < 0)
		return r;
	r = sd_bus_creds_get_euid(c, ret);
	if (r < 0)
		r = sd_bus_creds_get_uid(c, ret);
	return r;
}

static bool visible(const struct groups *gs, pid_t pid)
{
	return !gs->restricted || bus_may_see(gs->proc_fd, gs->viewer, pid);
}

static int collect_process(const struct manager_process_info *p, void *userdata)
{
	struct groups *gs = userdata;
	const char *key = p->unit ? p->unit : p->cgroup ? p->cgroup : "-";
	struct group *g;

	if (!visible(gs, p->pid))
		return 0;
	g = group_get(gs, key, p->cgroup, p->unit, p->source, p->source_kind);
	return g ? group_add_pid(g, p->pid, p->exe) : -ENOMEM;
}

static int collect_pushed(const struct manager_cgroup_info *c, void *userdata)
{
	struct groups *gs = userdata;
	struct group *g = group_get(gs, c->unit ?: c->cgroup, c->cgroup, c->unit, c->source, c->source_kind);

	if (!g)
		return -ENOMEM;
	g->pushed = true;
	return 0;
}

/* A group protected as a whole: its processes from cgroupfs, at most
 * PUSHED_PIDS of them, and their executables until SAMPLES_PER_GROUP are
 * known or READLINKS_PER_GROUP were read. Once per call, in its step. */
#define PUSHED_PIDS 4096
#define READLINKS_PER_GROUP 64
static void group_fill(struct bus_status *b, struct groups *gs, struct group *g)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0, readlinks = 0;

	if (!g->pushed || g->filled)
		return;
	g->filled = true;
	if (cgroup_list_pids(manager_cgroup_root_fd(b->m), g->cgroup, PUSHED_PIDS, &pids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		char name[32], exe[4096] = "?";

		if (!visible(gs, pids[i]))
			continue;
		if (g->n_samples < SAMPLES_PER_GROUP && readlinks++ < READLINKS_PER_GROUP) {
			ssize_t l;

			snprintf(name, sizeof(name), "%d/exe", (int)pids[i]);
			l = readlinkat(manager_proc_fd(b->m), name, exe, sizeof(exe) - 1);
			if (l < 0)
				continue; /* exited, or a kernel thread */
			exe[l] = '\0';
		}
		if (group_add_pid(g, pids[i], exe) < 0)
			return;
	}
}

struct figures {
	uint64_t mapped, resident, locked, majflt, breaches;
	uint64_t text_faults;	 /* STAT_UNKNOWN when it cannot be had */
	const char *text_source; /* "kernel", "estimate", "" with no figure */
};
#define FIGURES_UNKNOWN                                                                        \
	{ STAT_UNKNOWN, STAT_UNKNOWN, STAT_UNKNOWN, STAT_UNKNOWN, STAT_UNKNOWN, STAT_UNKNOWN, "" }

static void figures_set_text_faults(struct figures *f, const struct text_fault_reading *rd)
{
	f->text_faults = rd->faults;
	f->text_source = text_fault_source_to_string(rd->source);
}

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
static int read_sample(struct bus_status *b, struct groups *gs, const struct exe_sample *s,
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
static void smaps_figures(struct bus_status *b, struct groups *gs, const struct group *g, struct figures *f)
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
static void group_figures(struct bus_status *b, struct groups *gs, const struct group *g,
			  const struct backend_unit_report *rep, struct figures *f, bool text_faults)
{
	const char *key = NULL;
	struct text_fault_reading rd;

	*f = (struct figures){ .mapped = rep->mapped, .resident = rep->resident, .locked = rep->locked,
			       .text_faults = STAT_UNKNOWN, .text_source = "" };
	if (rep->mapped == BACKEND_FIGURE_UNKNOWN || rep->resident == BACKEND_FIGURE_UNKNOWN)
		smaps_figures(b, gs, g, f);
	/* Only ListUnitsEx shows them. Shared with Protect=auto: a unit it
	 * samples is not sampled twice. */
	if (text_faults && g->cgroup && text_faults_read(manager_text_faults(b->m), g->key, g->cgroup, &rd) >= 0)
		figures_set_text_faults(f, &rd);
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
static bool group_state(struct bus_status *b, const struct group *g, const struct backend_unit_report *rep,
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
	char autostate[256];

	/* Protect=auto's own words before the policy (metrics read that). */
	if (manager_auto_describe(b->m, g->key, autostate, sizeof(autostate)) >= 0)
		snprintf(buf, size, "%s, %s (policy %s)", rep->state, autostate, g->source);
	else
		snprintf(buf, size, "%s (policy %s)", rep->state, g->source);
	return rep->protected_now;
}

/* Watched units with no process protected: "auto: watched, not
 * protected (N text faults/s ...)". */
struct auto_rows {
	struct bus_status *b;
	sd_bus_message *reply;
	struct groups *gs;
	const char *backend;
	bool ex;
};

/* One row of ListUnits, or of ListUnitsEx (which adds the reason and its
 * source, the text faults and where they come from). */
struct unit_row {
	const char *unit, *cgroup, *backend;
	bool protected_now;
	const char *state;
	uint32_t processes;
	const struct figures *f;
	const char *reason, *reason_source;
};

#define LIST_UNITS_ROW "sssbsuttttt"
#define LIST_UNITS_EX_ROW LIST_UNITS_ROW "ssts"

static int append_unit_row(sd_bus_message *reply, bool ex, const struct unit_row *row)
{
	const struct figures *f = row->f;
	int r;

	r = sd_bus_message_open_container(reply, 'r', ex ? LIST_UNITS_EX_ROW : LIST_UNITS_ROW);
	if (r >= 0)
		r = sd_bus_message_append(reply, LIST_UNITS_ROW, row->unit, row->cgroup, row->backend,
					  (int)row->protected_now, row->state, row->processes, f->mapped,
					  f->resident, f->locked, f->majflt, f->breaches);
	if (r >= 0 && ex)
		r = sd_bus_message_append(reply, "ssts", row->reason, row->reason_source, f->text_faults,
					  f->text_source);
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	return r;
}

static int append_auto_row(const char *unit, const char *cgroup, void *userdata)
{
	struct auto_rows *ar = userdata;
	struct figures f = FIGURES_UNKNOWN;
	struct text_fault_reading rd;
	char why[256];

	if (group_find(ar->gs, unit) || manager_auto_describe(ar->b->m, unit, why, sizeof(why)) < 0)
		return 0;
	/* Protect=auto's timer samples it: its last reading, no I/O here. */
	if (text_faults_last(manager_text_faults(ar->b->m), unit, &rd) >= 0)
		figures_set_text_faults(&f, &rd);
	_cleanup_(bus_names_done) struct bus_names bn = { 0 };
	const char *u = bus_name(&bn, unit), *c = bus_name(&bn, cgroup), *w = bus_name(&bn, why);
	const struct unit_row row = { u, c, ar->backend, false, w, 0, &f, "auto", "" };

	return bn.err ?: append_unit_row(ar->reply, ar->ex, &row);
}

struct section_rows {
	sd_bus_message *reply;
	struct groups *gs;
	const char *backend;
	bool ex;
};

static int append_section_row(const char *unit, const struct rule_settings *s, const char *source,
			      void *userdata)
{
	struct section_rows *sr = userdata;
	char why[512];

	if (group_find(sr->gs, unit))
		return 0;
	if (s->protect == PROTECT_AUTO)
		snprintf(why, sizeof(why), "no process running (Protect=auto at %s)", strna(source));
	else if (s->protect > 0)
		snprintf(why, sizeof(why), "no process running (Protect=yes at %s)", strna(source));
	else if (s->protect == 0)
		snprintf(why, sizeof(why), "Protect=no at %s", strna(source));
	else
		snprintf(why, sizeof(why), "section without Protect= at %s", strna(source));
	static const struct figures f = FIGURES_UNKNOWN;
	_cleanup_(bus_names_done) struct bus_names bn = { 0 };
	const char *u = bus_name(&bn, unit), *w = bus_name(&bn, why), *src = bus_name(&bn, strempty(source));
	/* The section decides, whatever it says. */
	const struct unit_row row = { u, "", sr->backend, false, w, 0, &f, "drop-in", src };

	return bn.err ?: append_unit_row(sr->reply, sr->ex, &row);
}

/* ListUnits and ListLibraries read other processes' smaps and stat: a
 * call becomes a job that reads one unit's processes per turn of the
 * loop, at idle priority, so that exec events (normal priority) are
 * decided between units; the reply goes out when the last unit is read.
 * At most MAX_STATUS_JOBS calls are answered at a time. */
#define MAX_STATUS_JOBS 16

struct status_job {
	struct bus_status *b;
	sd_bus_message *call;
	sd_event_source *step;
	struct groups gs;
	size_t next;				 /* the next group to read */
	int (*read_group)(struct status_job *j, size_t i);
	int (*reply)(struct status_job *j);	 /* builds and sends the reply */
	void (*done)(struct status_job *j);	 /* frees what the kind added */
	void *data;
	bool linked; /* in b->jobs, counted in n_jobs */
	struct status_job *prev, *next_job;
};

static void status_job_free(struct status_job *j)
{
	struct bus_status *b = j->b;

	if (j->linked) {
		if (j->prev)
			j->prev->next_job = j->next_job;
		else
			b->jobs = j->next_job;
		if (j->next_job)
			j->next_job->prev = j->prev;
		b->n_jobs--;
	}
	sd_event_source_disable_unref(j->step);
	sd_bus_message_unref(j->call);
	if (j->done)
		j->done(j);
	groups_done(&j->gs);
	free(j);
}

void bus_status_done(struct bus_status *b)
{
	while (b->jobs)
		status_job_free(b->jobs);
}

/* The call is answered (or failed) and the job goes. */
static void status_job_finish(struct status_job *j, int r)
{
	if (r >= 0)
		r = j->reply(j);
	if (r < 0) {
		log_debug_errno(r, "status call failed: %m");
		(void)sd_bus_reply_method_errno(j->call, r, NULL);
	}
	status_job_free(j);
}

static int on_status_step(sd_event_source *s, void *userdata)
{
	struct status_job *j = userdata;
	int r = 0;

	(void)s;
	if (j->next < j->gs.n)
		r = j->read_group(j, j->next++);
	if (r < 0 || j->next >= j->gs.n)
		status_job_finish(j, r);
	return 0;
}

/* Takes j: it is answered now (nothing to read) or later. */
static int status_job_start(struct bus_status *b, struct status_job *j)
{
	int r;

	j->next_job = b->jobs;
	if (b->jobs)
		b->jobs->prev = j;
	b->jobs = j;
	b->n_jobs++;
	j->linked = true;
	if (j->gs.n == 0) {
		status_job_finish(j, 0);
		return 1;
	}
	r = sd_event_add_defer(b->event, &j->step, on_status_step, j);
	if (r >= 0)
		r = sd_event_source_set_priority(j->step, SD_EVENT_PRIORITY_IDLE);
	if (r >= 0)
		r = sd_event_source_set_enabled(j->step, SD_EVENT_ON);
	if (r < 0) {
		status_job_free(j);
		return r;
	}
	(void)sd_event_source_set_description(j->step, "status-call");
	return 1;
}

/* A new job for call, its groups collected; NULL and *ret_r < 0 on
 * failure (too many calls at once: -EBUSY). */
static struct status_job *status_job_new(struct bus_status *b, sd_bus_message *call, bool collect, int *ret_r)
{
	struct status_job *j;
	int r;

	if (b->n_jobs >= MAX_STATUS_JOBS) {
		*ret_r = -EBUSY;
		return NULL;
	}
	j = calloc(1, sizeof(*j));
	if (!j) {
		*ret_r = -ENOMEM;
		return NULL;
	}
	j->b = b;
	j->call = sd_bus_message_ref(call);
	groups_init(&j->gs);
	j->gs.proc_fd = manager_proc_fd(b->m);
	r = bus_caller_uid(call, &j->gs.viewer);
	/* Who cannot be told sees as little as anyone but root. */
	j->gs.restricted = r < 0 || j->gs.viewer != 0;
	if (r < 0)
		j->gs.viewer = (uid_t)-1;
	if (collect || j->gs.restricted) {
		r = manager_foreach_process(b->m, collect_process, &j->gs);
		if (r >= 0)
			r = manager_foreach_pushed(b->m, collect_pushed, &j->gs);
		if (r < 0) {
			status_job_free(j);
			*ret_r = r;
			return NULL;
		}
	}
	return j;
}

/* Units: the backend's report of each, then its figures, one per step. */
struct units_job {
	struct backend_unit_report *reps;
	struct figures *figs;
	bool ex; /* ListUnitsEx */
};

static int units_read_group(struct status_job *j, size_t i)
{
	struct units_job *u = j->data;

	group_fill(j->b, &j->gs, &j->gs.g[i]);
	group_figures(j->b, &j->gs, &j->gs.g[i], &u->reps[i], &u->figs[i], u->ex);
	return 0;
}

/* A method return with one array of @contents, opened for its rows. */
static int array_reply_open(struct status_job *j, const char *contents, sd_bus_message **ret)
{
	int r = sd_bus_message_new_method_return(j->call, ret);

	if (r >= 0)
		r = sd_bus_message_open_container(*ret, 'a', contents);
	return r;
}

/* Close the array and send it, unless filling it failed (@r < 0). */
static int array_reply_send(sd_bus_message *reply, int r)
{
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
	return r;
}

/* A unit's text fault reading outlives the status calls that read it by
 * this long (metrics timers come every few minutes at most). */
#define TEXT_FAULTS_IDLE_USEC (3600ULL * 1000000)

static int units_reply(struct status_job *j)
{
	struct units_job *u = j->data;
	struct groups *gs = &j->gs;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	const struct backend_ops *ops = manager_backend(j->b->m, NULL);
	int r;

	r = array_reply_open(j, u->ex ? "(" LIST_UNITS_EX_ROW ")" : "(" LIST_UNITS_ROW ")", &reply);
	for (size_t i = 0; r >= 0 && i < gs->n; i++) {
		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const struct group *g = &gs->g[i];
		char why[512];
		bool on;

		if (gs->restricted && g->n_pids == 0)
			continue; /* none of the caller's processes in it */
		on = group_state(j->b, g, &u->reps[i], why, sizeof(why));
		/* Protect=auto decided it (the rule only let it watch). */
		bool by_auto = manager_auto_protects(j->b->m, g->key);
		const struct unit_row row = {
			bus_name(&bn, g->key), bus_name(&bn, g->cgroup), ops->name, on, bus_name(&bn, why),
			(uint32_t)g->n_pids, &u->figs[i], by_auto ? "auto" : g->source_kind,
			bus_name(&bn, g->source),
		};

		r = bn.err ?: append_unit_row(reply, u->ex, &row);
	}
	/* Units without a process of the caller's in them: root's only. */
	if (r >= 0 && !gs->restricted) {
		struct auto_rows ar = { j->b, reply, gs, ops->name, u->ex };

		r = manager_auto_foreach(j->b->m, append_auto_row, &ar);
	}
	if (r >= 0 && !gs->restricted) {
		struct section_rows sr = { reply, gs, ops->name, u->ex };

		r = units_foreach_section(j->b->units, append_section_row, &sr);
	}
	/* Units read before and not since (gone, no longer listed) go. */
	text_faults_prune(manager_text_faults(j->b->m), now_ns() / 1000, TEXT_FAULTS_IDLE_USEC);
	return array_reply_send(reply, r);
}

static void units_done(struct status_job *j)
{
	struct units_job *u = j->data;

	if (!u)
		return;
	free(u->reps);
	free(u->figs);
	free(u);
}

int bus_status_list_units(struct bus_status *b, sd_bus_message *msg, bool ex, sd_bus_error *error)
{
	struct status_job *j;
	struct units_job *u;
	void *state;
	int r;

	j = status_job_new(b, msg, true, &r);
	if (!j)
		return r == -EBUSY ? sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
						      "too many status calls in progress") : r;
	j->read_group = units_read_group;
	j->reply = units_reply;
	j->done = units_done;
	j->data = u = calloc(1, sizeof(*u));
	if (u) {
		u->reps = calloc(j->gs.n ?: 1, sizeof(*u->reps));
		u->figs = calloc(j->gs.n ?: 1, sizeof(*u->figs));
	}
	if (!u || !u->reps || !u->figs) {
		status_job_free(j);
		return -ENOMEM;
	}
	u->ex = ex;
	for (size_t i = 0; i < j->gs.n; i++)
		u->reps[i] = (struct backend_unit_report){ .key = j->gs.g[i].key, .cgroup = j->gs.g[i].cgroup };
	/* The backend's own state: cheap, and read now. */
	r = manager_backend(b->m, &state)->report_units(state, u->reps, j->gs.n);
	if (r < 0) {
		status_job_free(j);
		return r;
	}
	return status_job_start(b, j);
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

static void libs_done(struct libs *ls)
{
	for (size_t i = 0; i < ls->n; i++)
		free(ls->l[i].path);
	free(ls->l);
	hashmap_done(&ls->index);
}

struct file_reports {
	struct backend_file_report *f;
	size_t n;
};

static void file_reports_done(struct file_reports *fr)
{
	backend_file_reports_free(fr->f, fr->n);
}

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

/* Libraries: the backend's report (the lock backend keeps it), or the
 * sampled processes' smaps, one unit per step. */
struct libs_job {
	struct libs ls;
	size_t sample_id; /* samples read so far, across groups */
};

static int libs_read_group(struct status_job *j, size_t g)
{
	struct libs_job *lj = j->data;
	int r = 0;

	group_fill(j->b, &j->gs, &j->gs.g[g]);
	for (size_t k = 0; k < j->gs.g[g].n_samples; k++, lj->sample_id++) {
		const struct exe_sample *smp = &j->gs.g[g].samples[k];
		struct text_mappings tm;

		if (read_sample(j->b, &j->gs, smp, &tm) < 0)
			continue;
		for (size_t m = 0; m < tm.n && r >= 0; m++)
			r = libs_add(&lj->ls, g, lj->sample_id, smp->n_pids, &tm.items[m]);
		text_mappings_done(&tm);
		if (r < 0)
			return r;
	}
	return 0;
}

static int libs_reply(struct status_job *j)
{
	struct libs *ls = &((struct libs_job *)j->data)->ls;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	int r;

	for (size_t i = 0; i < ls->n; i++)
		lib_flush(&ls->l[i]);
	if (ls->n)
		qsort(ls->l, ls->n, sizeof(*ls->l), cmp_lib);
	r = array_reply_open(j, "(suuttts)", &reply);
	for (size_t i = 0; r >= 0 && i < ls->n; i++) {
		_cleanup_(bus_names_done) struct bus_names bn = { 0 };
		const char *path = bus_name(&bn, ls->l[i].path);

		r = bn.err ?: sd_bus_message_append(reply, "(suuttts)", path, ls->l[i].n_units,
						   ls->l[i].n_pids, ls->l[i].mapped, ls->l[i].resident,
						   ls->l[i].locked, ls->l[i].state);
	}
	return array_reply_send(reply, r);
}

static void libs_job_done(struct status_job *j)
{
	struct libs_job *lj = j->data;

	if (!lj)
		return;
	libs_done(&lj->ls);
	free(lj);
}

int bus_status_list_libraries(struct bus_status *b, sd_bus_message *msg, sd_bus_error *error)
{
	_cleanup_(file_reports_done) struct file_reports fr = { 0 };
	const struct backend_ops *ops;
	struct status_job *j;
	struct libs_job *lj;
	void *state;
	int r;

	ops = manager_backend(b->m, &state);
	j = status_job_new(b, msg, !ops->report_files, &r);
	if (!j)
		return r == -EBUSY ? sd_bus_error_set(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
						      "too many status calls in progress") : r;
	j->read_group = libs_read_group;
	j->reply = libs_reply;
	j->done = libs_job_done;
	j->data = lj = calloc(1, sizeof(*lj));
	if (!lj) {
		status_job_free(j);
		return -ENOMEM;
	}
	hashmap_init(&lj->ls.index, hash_file, equal_file);
	/* The backend's own list names every file; others than root get
	 * their own processes' (collected above). */
	if (ops->report_files && !j->gs.restricted) {
		r = ops->report_files(state, &fr.f, &fr.n);
		if (r >= 0 && !(lj->ls.l = calloc(fr.n ?: 1, sizeof(*lj->ls.l))))
			r = -ENOMEM;
		if (r < 0) {
			status_job_free(j);
			return r;
		}
		for (size_t i = 0; i < fr.n; i++)
			lj->ls.l[lj->ls.n++] = (struct lib){
				.path = TAKE_PTR(fr.f[i].path),
				.n_units = fr.f[i].n_units,
				.n_pids = fr.f[i].n_pids,
				.mapped = fr.f[i].mapped,
				.resident = fr.f[i].resident,
				.locked = fr.f[i].locked,
				.state = fr.f[i].state,
				.cur_group = SIZE_MAX,
				.cur_sample = SIZE_MAX,
			};
	}
	return status_job_start(b, j);
}
