/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Prewarm: sampling, records on disk, replay.
 *
 * Sampling: every PrewarmRecordSec= each followed process's executable
 * file mappings are read (maps.h); each file is opened as the lock
 * backend opens it (residency_open(): map_files or the path without
 * symlinks, identity checked), and a page counts as used when it is
 * resident (mincore()) and mapped by the process (the present bit of
 * /proc/PID/pagemap; without pagemap, resident is taken). Each round a
 * used page of a unit adds one to its heat, so the pages used longest
 * (from the start on) are the hottest.
 *
 * Records: one file per unit in the record directory, replaced whole (a
 * temporary file renamed over it) every PrewarmRecordSec= when something
 * new was seen, after the unit's last exit (from a source of its own at
 * idle priority: the exit is seen on the exec path, which never writes a
 * record) and when the daemon stops. Not fsync'ed: a record is a cache,
 * and one torn by a power loss is refused by the parser and dropped.
 *
 * Replay: when a unit's first process starts, and for every record when
 * the daemon starts, the record is read, each file opened by path
 * without symlinks and checked against the recorded device, inode, size
 * and mtime (a changed file is dropped: an upgrade), and the ranges read
 * ahead (readahead(2)) hottest first within the unit's and the global
 * budget, a few megabytes per turn of the event loop, at idle I/O
 * priority, and not at all while memory is short. A replayed record also
 * seeds the unit's heat, so that records carry over runs; at the end of a
 * sampled run what it did not use loses half its heat and fades out. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include <systemd/sd-event.h>

#include "cgroup.h"
#include "hashmap.h"
#include "log.h"
#include "maps.h"
#include "meminfo.h"
#include "prewarm-record.h"
#include "event-util.h"
#include "prewarm.h"
#include "residency.h"
#include "util.h"

#define MAX_UNITS 4096		  /* units known at once; more are not followed */
#define MAX_FILE_PAGES (1u << 20) /* 4 GiB of 4 KiB pages: larger files are not recorded */
#define MAX_SAMPLED_PER_UNIT 32	  /* processes sampled per unit and round */
#define GAP_PAGES 4		  /* cold pages read to join two ranges into one request */
#define CHUNK_BYTES (8ULL << 20)  /* read ahead per turn of the loop */
#define CHUNK_DELAY_USEC 2000	  /* between turns: the loop serves exec events meanwhile */

/* Linux's ioprio interface (include/uapi/linux/ioprio.h), not in glibc. */
#define IOPRIO_CLASS_SHIFT 13
#define IOPRIO_CLASS_IDLE 3
#define IOPRIO_WHO_PROCESS 1

struct pw_file {
	struct prewarm_file id; /* identity from fstat(), path; no ranges */
	uint8_t *heat;		/* per page */
	uint8_t *mark;		/* per page: MARK_ROUND | MARK_RUN */
	size_t n_pages;
};

#define MARK_ROUND 1 /* used in this sampling round */
#define MARK_RUN 2   /* used at some round of the unit's current run */

struct pw_unit {
	char *key;
	size_t n_procs;
	/* Followed as a cgroup (decided as a whole, manager-push.c): its
	 * processes listed from it at each round; held by n_cgroups. */
	char *cgroup;
	size_t n_cgroups;
	struct pw_file *files;
	size_t n_files, allocated;
	uint64_t budget;    /* PrewarmBudget= of the unit's settings; 0: the global one only */
	bool dirty;	    /* seen something since the record was written */
	bool sampled;	    /* its current run was sampled at least once */
	bool queued;	    /* a replay is queued or running */
	bool stop_due;	    /* its last process ended: the record of the run is to be written */
	const char *state;
	struct prewarm_unit_report fig;
};

struct pw_proc {
	pid_t pid;
	int proc_pid_fd; /* this process's /proc/PID: never a reused PID */
	struct pw_unit *u;
};

struct pw_job {
	struct pw_job *next;
	struct pw_unit *u;
	struct prewarm_record rec;
	struct prewarm_step *steps;
	size_t n_steps, next_step;
	int *fds;	/* per file: -2 not opened yet, -1 invalid */
	uint64_t *piece; /* per file: the most one readahead(2) reads there */
	uint64_t planned, read, skipped;
	size_t invalidated;
	bool stopped;
};

struct prewarm {
	struct prewarm_env env;
	char *dir;
	int dir_fd;
	struct hashmap units; /* key -> pw_unit */
	struct hashmap procs; /* pid -> pw_proc */
	sd_event_source *record_timer, *replay_timer;
	sd_event_source *stopped; /* writes the records of units that stopped */
	struct pw_job *jobs, *jobs_tail;
	uint64_t global_left; /* of PrewarmBudget= for the replays queued together */
	uint64_t page_size, mem_total;
	size_t n_cgroups; /* cgroups followed, all units together */
	bool use_query;
	bool ioprio_warned;
};

static void pw_file_done(struct pw_file *f)
{
	prewarm_file_done(&f->id);
	free(f->heat);
	free(f->mark);
}

static void unit_drop_files(struct pw_unit *u)
{
	for (size_t i = 0; i < u->n_files; i++)
		pw_file_done(&u->files[i]);
	free(u->files);
	u->files = NULL;
	u->n_files = u->allocated = 0;
}

static void unit_free(struct pw_unit *u)
{
	if (!u)
		return;
	unit_drop_files(u);
	free(u->cgroup);
	free(u->key);
	free(u);
}

static struct pw_unit *unit_get(struct prewarm *p, const char *key)
{
	struct pw_unit *u = hashmap_get(&p->units, key);

	if (u)
		return u;
	if (p->units.n_items >= MAX_UNITS)
		return NULL;
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->key = strdup(key);
	u->state = "known";
	if (!u->key || hashmap_put(&p->units, u->key, u) < 0) {
		unit_free(u);
		return NULL;
	}
	u->fig.key = u->key;
	return u;
}

/* The directory, opened (and created for writing) when first needed:
 * a daemon that never prewarms leaves no trace of it. */
static int dir_open(struct prewarm *p, bool create)
{
	if (p->dir_fd >= 0)
		return p->dir_fd;
	p->dir_fd = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (p->dir_fd < 0 && errno == ENOENT && create) {
		if (mkdir(p->dir, 0700) < 0 && errno != EEXIST)
			return log_warning_errno(-errno, "cannot create the prewarm directory %s: %m", p->dir);
		p->dir_fd = open(p->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	}
	if (p->dir_fd < 0) {
		int r = -errno;

		if (r != -ENOENT)
			log_warning_errno(r, "cannot open the prewarm directory %s: %m", p->dir);
		return r;
	}
	return p->dir_fd;
}

static bool same_identity(const struct prewarm_file *f, const struct stat *st)
{
	return f->dev_major == major(st->st_dev) && f->dev_minor == minor(st->st_dev) &&
	       f->inode == (uint64_t)st->st_ino && f->size == (uint64_t)st->st_size &&
	       f->mtime_sec == (int64_t)st->st_mtim.tv_sec && f->mtime_nsec == (uint32_t)st->st_mtim.tv_nsec;
}

static void identity_from_stat(struct prewarm_file *f, const struct stat *st)
{
	f->dev_major = major(st->st_dev);
	f->dev_minor = minor(st->st_dev);
	f->inode = (uint64_t)st->st_ino;
	f->size = (uint64_t)st->st_size;
	f->mtime_sec = (int64_t)st->st_mtim.tv_sec;
	f->mtime_nsec = (uint32_t)st->st_mtim.tv_nsec;
}

/* Whether path, opened as a replay opens it (in the daemon's mount
 * namespace, no symlink followed), is the file st describes: a program
 * in a container maps paths of its own namespace, which a replay could
 * not find, so those files are not recorded. */
static bool path_names(const char *path, const struct stat *st)
{
	_cleanup_close_ int fd = residency_open_path(path);
	struct stat st2;
	struct prewarm_file id;

	if (fd < 0 || fstat(fd, &st2) < 0)
		return false;
	identity_from_stat(&id, st);
	return same_identity(&id, &st2);
}

/* The unit's live entry for the file with this identity, made if new
 * (check_path: only if its path names it for a replay). */
static struct pw_file *unit_file(struct prewarm *p, struct pw_unit *u, const struct stat *st, const char *path,
				 bool check_path)
{
	uint64_t n_pages = ((uint64_t)st->st_size + p->page_size - 1) / p->page_size;
	struct pw_file *f;

	for (size_t i = 0; i < u->n_files; i++)
		if (same_identity(&u->files[i].id, st))
			return &u->files[i];
	if (u->n_files >= PREWARM_RECORD_MAX_FILES || n_pages == 0 || n_pages > MAX_FILE_PAGES || !path ||
	    path[0] != '/' || (check_path && !path_names(path, st)))
		return NULL;
	if (u->n_files == u->allocated) {
		size_t n = u->allocated ? u->allocated * 2 : 8;
		struct pw_file *nf = realloc(u->files, n * sizeof(*nf));

		if (!nf)
			return NULL;
		u->files = nf;
		u->allocated = n;
	}
	f = &u->files[u->n_files];
	*f = (struct pw_file){ .n_pages = (size_t)n_pages };
	identity_from_stat(&f->id, st);
	f->id.path = strdup(path);
	f->heat = calloc(f->n_pages, 1);
	f->mark = calloc(f->n_pages, 1);
	if (!f->id.path || !f->heat || !f->mark) {
		pw_file_done(f);
		return NULL;
	}
	u->n_files++;
	return f;
}

/* Mark the pages of mapping m that are resident and mapped by the
 * process (pagemap_fd, or -1: resident is enough). */
static void sample_mapping(struct prewarm *p, struct pw_unit *u, int proc_pid_fd, int pagemap_fd,
			   const struct exec_mapping *m)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ unsigned char *vec = NULL;
	_cleanup_free_ uint64_t *pm = NULL;
	const char *why;
	struct pw_file *f;
	struct stat st;
	uint64_t len, first;
	size_t n;
	void *addr;

	/* A deleted file (replaced by an upgrade) cannot be read back. */
	if (m->kind != MAPPING_FILE || m->end <= m->start)
		return;
	fd = residency_open(proc_pid_fd, m, &why);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	if (m->offset >= (uint64_t)st.st_size)
		return;
	f = unit_file(p, u, &st, m->path, true);
	if (!f)
		return;
	len = m->end - m->start;
	if (len > (uint64_t)st.st_size - m->offset)
		len = ((uint64_t)st.st_size - m->offset + p->page_size - 1) / p->page_size * p->page_size;
	n = (size_t)(len / p->page_size);
	first = m->offset / p->page_size;
	if (n == 0 || residency_map(fd, m->offset, len, &addr) < 0)
		return;
	vec = malloc(n);
	if (vec && residency_mincore(addr, len, vec) >= 0) {
		pm = pagemap_fd >= 0 ? malloc(n * sizeof(uint64_t)) : NULL;
		if (pm && pread(pagemap_fd, pm, n * sizeof(uint64_t), (off_t)(m->start / p->page_size * 8)) !=
				  (ssize_t)(n * sizeof(uint64_t))) {
			free(pm);
			pm = NULL;
		}
		for (size_t i = 0; i < n && first + i < f->n_pages; i++)
			if ((vec[i] & 1) && (!pm || (pm[i] >> 63)))
				f->mark[first + i] |= MARK_ROUND;
	}
	residency_unmap(addr, len);
}

static void sample_process(struct prewarm *p, struct pw_proc *pp)
{
	struct exec_mappings maps = { 0 };
	_cleanup_close_ int pagemap_fd = -1;

	if (maps_read(pp->proc_pid_fd, &p->use_query, &maps) < 0)
		goto out;
	pagemap_fd = openat(pp->proc_pid_fd, "pagemap", O_RDONLY | O_CLOEXEC);
	for (size_t i = 0; i < maps.n; i++)
		sample_mapping(p, pp->u, pp->proc_pid_fd, pagemap_fd, &maps.items[i]);
out:
	exec_mappings_clear(&maps);
	free(maps.items);
}

/* Fold a round's marks into the heat. */
static void unit_fold(struct pw_unit *u)
{
	for (size_t i = 0; i < u->n_files; i++) {
		struct pw_file *f = &u->files[i];

		for (size_t k = 0; k < f->n_pages; k++)
			if (f->mark[k] & MARK_ROUND) {
				f->mark[k] = MARK_RUN;
				if (f->heat[k] < UINT8_MAX) {
					f->heat[k]++;
					u->dirty = true;
				}
			}
	}
}

static int unit_to_record(struct prewarm *p, struct pw_unit *u, struct prewarm_record *ret)
{
	struct prewarm_record rec = { .time = (int64_t)time(NULL) };
	int r = 0;

	rec.unit = strdup(u->key);
	rec.files = calloc(u->n_files ? u->n_files : 1, sizeof(*rec.files));
	if (!rec.unit || !rec.files) {
		prewarm_record_done(&rec);
		return -ENOMEM;
	}
	for (size_t i = 0; i < u->n_files; i++) {
		const struct pw_file *f = &u->files[i];
		struct prewarm_file *o = &rec.files[rec.n_files];

		*o = f->id;
		o->path = NULL;
		o->ranges = NULL;
		o->n_ranges = 0;
		r = prewarm_ranges_from_heat(f->heat, f->n_pages, p->page_size, f->id.size, GAP_PAGES, &o->ranges,
					     &o->n_ranges);
		if (r < 0 || !(o->path = strdup(f->id.path))) {
			prewarm_file_done(o);
			prewarm_record_done(&rec);
			return -ENOMEM;
		}
		if (o->n_ranges == 0) {
			prewarm_file_done(o);
			continue;
		}
		rec.n_files++;
	}
	*ret = rec;
	return 0;
}

/* Write text as the record name: a temporary file renamed over it. No
 * fsync: this runs in the event loop, and a record torn by a crash is
 * refused by the parser (a cache, not state). */
static int write_atomically(struct prewarm *p, const char *name, const char *text, size_t len)
{
	char tmp[300];
	_cleanup_close_ int fd = -1;
	int dfd = dir_open(p, true), r = 0;

	if (dfd < 0)
		return dfd;
	if ((size_t)snprintf(tmp, sizeof(tmp), ".%.280s.tmp", name) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0 && errno == ENOENT) {
		/* The directory was removed under us: make it again. */
		closep(&p->dir_fd);
		p->dir_fd = -1;
		dfd = dir_open(p, true);
		if (dfd < 0)
			return dfd;
		fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	}
	if (fd < 0)
		return -errno;
	for (size_t o = 0; o < len;) {
		ssize_t w = write(fd, text + o, len - o);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			r = w < 0 ? -errno : -EIO;
			break;
		}
		o += (size_t)w;
	}
	if (r >= 0 && renameat(dfd, tmp, dfd, name) < 0)
		r = -errno;
	if (r < 0) {
		(void)unlinkat(dfd, tmp, 0);
		return r;
	}
	return 0;
}

static int write_record(struct prewarm *p, const struct prewarm_record *rec, const char *key)
{
	_cleanup_free_ char *text = NULL;
	char name[300];
	size_t len;
	int r;

	r = prewarm_record_filename(key, name, sizeof(name));
	if (r < 0)
		return r;
	r = prewarm_record_format(rec, &text, &len);
	if (r < 0)
		return r;
	return write_atomically(p, name, text, len);
}

/* At the end of a sampled run: in the files it used, what it did not use
 * loses half its heat, so that ranges a unit stopped using fade out over
 * runs. A file the run was not seen using at all keeps its heat: a run
 * that ended (or was sampled last) before it got there says nothing about
 * it, and one such run must not drop it from the record. */
static void unit_decay(struct pw_unit *u)
{
	for (size_t i = 0; i < u->n_files; i++) {
		struct pw_file *f = &u->files[i];
		bool used = false;

		for (size_t k = 0; k < f->n_pages && !used; k++)
			used = f->mark[k] & MARK_RUN;
		if (!used)
			continue;
		for (size_t k = 0; k < f->n_pages; k++)
			if (f->heat[k] && !(f->mark[k] & MARK_RUN))
				f->heat[k] /= 2;
	}
}

/* Write the unit's record: every round when something new was seen
 * (logged at debug), and at a stop (the unit's, or the daemon's) of a
 * run that was sampled, logged at info. A run too short to be sampled
 * leaves the record as it was. */
static void unit_write(struct prewarm *p, struct pw_unit *u, bool at_stop)
{
	struct prewarm_record rec;
	struct log_fields f = LOG_FIELDS_INIT;
	char b[32];
	int r;

	if ((at_stop ? !u->sampled : !u->dirty) || u->n_files == 0)
		return;
	if (at_stop)
		unit_decay(u);
	r = unit_to_record(p, u, &rec);
	if (r >= 0) {
		r = write_record(p, &rec, u->key);
		if (r >= 0) {
			u->fig.recorded_bytes = prewarm_record_bytes(&rec);
			u->fig.recorded_files = rec.n_files;
			u->fig.recorded_at = rec.time;
		}
	}
	f.unit = u->key;
	if (r < 0) {
		log_event_errno(LOG_WARNING, r, MID_PREWARM_RECORDED, &f, "cannot write the prewarm record of %s: %m",
				u->key);
		prewarm_record_done(&rec);
		return;
	}
	u->dirty = false;
	f.bytes = (long long)u->fig.recorded_bytes;
	format_bytes(b, sizeof(b), u->fig.recorded_bytes);
	log_event(at_stop ? LOG_INFO : LOG_DEBUG, MID_PREWARM_RECORDED, &f,
		  "prewarm record of %s written: %s in %zu file%s, %zu range%s", u->key, b, rec.n_files,
		  rec.n_files == 1 ? "" : "s", prewarm_record_n_ranges(&rec),
		  prewarm_record_n_ranges(&rec) == 1 ? "" : "s");
	prewarm_record_done(&rec);
}

/* A unit followed as a cgroup: at most MAX_SAMPLED_PER_UNIT of the
 * processes in it now, each by its /proc directory opened here (a PID
 * reused in between would be sampled once, as another process's text). */
static void sample_cgroup(struct prewarm *p, struct pw_unit *u)
{
	_cleanup_free_ pid_t *pids = NULL;
	size_t n = 0;

	if (cgroup_list_pids(p->env.cgroup_root_fd, u->cgroup, MAX_SAMPLED_PER_UNIT, &pids, &n) < 0)
		return;
	for (size_t i = 0; i < n; i++) {
		struct pw_proc pp = { .pid = pids[i], .u = u };
		char name[16];

		snprintf(name, sizeof(name), "%d", (int)pids[i]);
		pp.proc_pid_fd = openat(p->env.proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (pp.proc_pid_fd < 0)
			continue;
		sample_process(p, &pp);
		close(pp.proc_pid_fd);
		u->sampled = true;
	}
}

static void sample_all(struct prewarm *p)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&p->procs, &i, e))) {
		struct pw_proc *pp = e->value;

		/* A round samples at most this many of a unit's processes:
		 * many workers of one program map the same text. */
		if (pp->u->n_procs > MAX_SAMPLED_PER_UNIT &&
		    (unsigned)pp->pid % (pp->u->n_procs / MAX_SAMPLED_PER_UNIT + 1) != 0)
			continue;
		sample_process(p, pp);
		pp->u->sampled = true;
	}
	e = NULL;
	i = 0;
	while ((e = hashmap_next(&p->units, &i, e))) {
		struct pw_unit *u = e->value;

		if (u->n_cgroups && u->cgroup)
			sample_cgroup(p, u);
		unit_fold(u);
	}
}

static uint64_t record_interval_usec(const struct prewarm *p)
{
	return (uint64_t)p->env.settings->prewarm_record_sec * 1000000ULL;
}

static void arm_record_timer(struct prewarm *p)
{
	(void)event_timer_set(p->record_timer, p->procs.n_items || p->n_cgroups ?
					       event_now(p->env.event) + record_interval_usec(p) : USEC_OFF);
}

static int on_record_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct prewarm *p = userdata;
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	(void)s;
	(void)usec;
	sample_all(p);
	while ((e = hashmap_next(&p->units, &i, e))) {
		struct pw_unit *u = e->value;

		if (u->n_procs || u->n_cgroups)
			unit_write(p, u, false);
	}
	arm_record_timer(p);
	return 0;
}

/* Replay. */

static void job_free(struct pw_job *j)
{
	if (!j)
		return;
	if (j->fds)
		for (size_t i = 0; i < j->rec.n_files; i++)
			closep(&j->fds[i]);
	free(j->fds);
	free(j->piece);
	free(j->steps);
	prewarm_record_done(&j->rec);
	free(j);
}

/* Seed the unit's heat from a file of its record that is still the
 * same file: the unit's next record goes on from it. */
static void seed_file(struct prewarm *p, struct pw_unit *u, const struct prewarm_file *rf, const struct stat *st)
{
	struct pw_file *f = unit_file(p, u, st, rf->path, false);

	if (!f)
		return;
	for (size_t k = 0; k < rf->n_ranges; k++) {
		const struct prewarm_range *g = &rf->ranges[k];
		uint8_t h = (uint8_t)(g->heat > UINT8_MAX ? UINT8_MAX : g->heat);
		uint64_t a = g->offset / p->page_size, b = (g->offset + g->length + p->page_size - 1) / p->page_size;

		for (uint64_t pg = a; pg < b && pg < f->n_pages; pg++)
			if (f->heat[pg] < h)
				f->heat[pg] = h;
	}
}

/* One kB figure of the block device's queue in sysfs: the device's own
 * directory, or its disk's for a partition. 0 when there is none. */
static uint64_t queue_kb(unsigned maj, unsigned min, const char *name)
{
	char path[128];
	_cleanup_free_ char *buf = NULL;
	size_t len;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/queue/%s", maj, min, name);
	if (read_file_at(AT_FDCWD, path, 64, &buf, &len) < 0) {
		snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/../queue/%s", maj, min, name);
		if (read_file_at(AT_FDCWD, path, 64, &buf, &len) < 0)
			return 0;
	}
	return strtoull(buf, NULL, 10);
}

/* readahead(2) and WILLNEED read at most the larger of the device's
 * read-ahead and its largest request (bdi io_pages) per call and drop the
 * rest silently: ranges are read in pieces of that size. 128 KiB (the
 * usual read-ahead) where sysfs does not say (no block device). */
static uint64_t readahead_piece(const struct stat *st)
{
	uint64_t ra = queue_kb(major(st->st_dev), minor(st->st_dev), "read_ahead_kb");
	uint64_t io = queue_kb(major(st->st_dev), minor(st->st_dev), "max_sectors_kb");
	uint64_t kb = ra > io ? ra : io;

	if (kb < 128)
		kb = 128;
	if (kb > 65536)
		kb = 65536;
	return kb * 1024;
}

/* Open file i of the job's record by path, no symlink followed, and
 * check that it is the file recorded; -1 in fds[i] if not. */
static int job_file(struct prewarm *p, struct pw_job *j, size_t i)
{
	const struct prewarm_file *rf = &j->rec.files[i];
	struct log_fields f = LOG_FIELDS_INIT;
	struct stat st;
	const char *why = NULL;
	int fd;

	if (j->fds[i] != -2)
		return j->fds[i];
	fd = residency_open_path(rf->path);
	if (fd < 0)
		why = fd == -ELOOP ? "a symlink in the path" : "cannot be opened";
	else if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		why = "not a regular file";
	else if (!same_identity(rf, &st))
		why = "device, inode, size or mtime changed";
	if (why) {
		closep(&fd);
		j->fds[i] = -1;
		j->invalidated++;
		j->u->fig.invalidated_files++;
		f.unit = j->u->key;
		f.exe = rf->path;
		log_event(LOG_INFO, MID_PREWARM_INVALIDATED, &f,
			  "prewarm record of %s: %s changed since recorded (%s); its ranges are not read", j->u->key,
			  rf->path, why);
		return -1;
	}
	/* The unit's record goes on from here (the higher heat wins, so a
	 * second replay changes nothing). */
	seed_file(p, j->u, rf, &st);
	j->piece[i] = readahead_piece(&st);
	j->fds[i] = fd;
	return fd;
}

/* Bytes of [off, off + len) of fd not in the page cache. */
static uint64_t missing_bytes(struct prewarm *p, int fd, uint64_t off, uint64_t len)
{
	uint64_t a = off / p->page_size * p->page_size, l = off + len - a, miss = 0;
	_cleanup_free_ unsigned char *vec = NULL;
	size_t n = (size_t)((l + p->page_size - 1) / p->page_size);
	void *addr;

	if (residency_map(fd, a, l, &addr) < 0)
		return len;
	vec = malloc(n);
	if (vec && residency_mincore(addr, l, vec) >= 0) {
		for (size_t i = 0; i < n; i++)
			if (!(vec[i] & 1))
				miss += p->page_size;
	} else {
		miss = len;
	}
	residency_unmap(addr, l);
	return miss < len ? miss : len;
}

/* Enough memory to read bytes more? MemAvailable must stay above the
 * larger of PressureReserve= and 5% of RAM, as the lock backend's
 * give-back reads it. */
static bool memory_allows(struct prewarm *p, uint64_t bytes)
{
	uint64_t avail, reserve = budget_resolve(&p->env.settings->pressure_reserve, p->mem_total);

	if (reserve < p->mem_total / 20)
		reserve = p->mem_total / 20;
	if (meminfo_available(p->env.proc_fd, &avail) < 0)
		return false;
	return avail > reserve && avail - reserve > bytes;
}

static void job_finish(struct prewarm *p, struct pw_job *j, const char *stopped_why)
{
	struct log_fields f = LOG_FIELDS_INIT;
	struct pw_unit *u = j->u;
	char b[32], pl[32];

	u->queued = false;
	u->fig.replays++;
	u->fig.replayed_bytes += j->read;
	u->fig.planned_bytes += j->planned;
	u->state = stopped_why ? "replay stopped" : "replayed";
	f.unit = u->key;
	if (stopped_why) {
		f.bytes = (long long)j->read;
		log_event(LOG_NOTICE, MID_PREWARM_SKIPPED, &f, "prewarm replay of %s stopped: %s", u->key,
			  stopped_why);
	}
	f.bytes = (long long)j->read;
	format_bytes(b, sizeof(b), j->read);
	format_bytes(pl, sizeof(pl), j->planned);
	log_event(LOG_INFO, MID_PREWARM_REPLAYED, &f,
		  "prewarm replay of %s: %s read back of %s planned, %zu of %zu file%s changed since recorded",
		  u->key, b, pl, j->invalidated, j->rec.n_files, j->rec.n_files == 1 ? "" : "s");
	/* A record with changed files is written again without them. */
	if (j->invalidated) {
		struct prewarm_record keep = j->rec;
		size_t n = 0;

		keep.files = calloc(j->rec.n_files, sizeof(*keep.files));
		if (keep.files) {
			for (size_t i = 0; i < j->rec.n_files; i++)
				if (j->fds[i] != -1)
					keep.files[n++] = j->rec.files[i];
			keep.n_files = n;
			if (write_record(p, &keep, u->key) >= 0) {
				u->fig.recorded_bytes = prewarm_record_bytes(&keep);
				u->fig.recorded_files = n;
			}
			free(keep.files);
		}
	}
}

/* The idle I/O class for the calling thread (who 0) while it reads
 * ahead, and the old priority back after. 0, or <0 when it could not be
 * set (the shipped unit filters ioprio_set() and runs the daemon at
 * best-effort 7 instead); *saved is -1 then. */
static int set_idle_io(bool on, int *saved)
{
	if (on) {
		*saved = (int)syscall(SYS_ioprio_get, IOPRIO_WHO_PROCESS, 0);
		if (*saved < 0)
			return -errno;
		if (syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, IOPRIO_CLASS_IDLE << IOPRIO_CLASS_SHIFT) < 0) {
			*saved = -1;
			return -errno;
		}
	} else if (*saved >= 0) {
		(void)syscall(SYS_ioprio_set, IOPRIO_WHO_PROCESS, 0, *saved);
	}
	return 0;
}

/* One turn: up to CHUNK_BYTES of the first job. */
static void replay_turn(struct prewarm *p)
{
	struct pw_job *j = p->jobs;
	uint64_t done = 0;
	const char *stopped = NULL;
	int saved = -1, r;

	if (!j)
		return;
	r = set_idle_io(true, &saved);
	if (r < 0 && !p->ioprio_warned) {
		p->ioprio_warned = true;
		log_info_errno(r, "prewarm: cannot take the idle I/O class (%m); reading ahead at the daemon's own I/O priority");
	}
	while (j->next_step < j->n_steps && done < CHUNK_BYTES) {
		const struct prewarm_step *s = &j->steps[j->next_step];
		const struct prewarm_range *g = &j->rec.files[s->file].ranges[s->range];
		uint64_t miss;
		int fd;

		fd = job_file(p, j, s->file);
		j->next_step++;
		if (fd < 0)
			continue;
		miss = missing_bytes(p, fd, g->offset, g->length);
		if (miss == 0)
			continue;
		if (!memory_allows(p, miss)) {
			stopped = "memory is short (MemAvailable near PressureReserve= or 5% of RAM)";
			break;
		}
		/* Sequential requests as large as the device takes; pages
		 * already there are skipped by the kernel. */
		for (uint64_t o = g->offset, end = g->offset + g->length; o < end; o += j->piece[s->file]) {
			uint64_t l = end - o < j->piece[s->file] ? end - o : j->piece[s->file];

			if (readahead(fd, (off64_t)o, (size_t)l) < 0)
				(void)posix_fadvise(fd, (off_t)o, (off_t)l, POSIX_FADV_WILLNEED);
		}
		j->read += miss;
		done += g->length;
	}
	set_idle_io(false, &saved);
	if (!stopped && j->next_step < j->n_steps)
		return;
	/* Files the reads did not reach (a budget, a stop) are still
	 * checked, without reading: the changed ones are said and dropped,
	 * the others carried into the unit's next record. */
	for (size_t i = 0; i < j->rec.n_files; i++)
		if (j->fds[i] == -2)
			(void)job_file(p, j, i);
	job_finish(p, j, stopped ?: (j->skipped ? "the daemon-wide PrewarmBudget= is spent" : NULL));
	p->jobs = j->next;
	if (!p->jobs) {
		p->jobs_tail = NULL;
		p->global_left = budget_resolve(&p->env.settings->prewarm_budget, p->mem_total);
	}
	job_free(j);
}

static int on_replay_timer(sd_event_source *s, uint64_t usec, void *userdata)
{
	struct prewarm *p = userdata;

	(void)usec;
	replay_turn(p);
	if (p->jobs)
		(void)event_timer_set(s, event_now(p->env.event) + CHUNK_DELAY_USEC);
	return 0;
}

/* Read the unit's record and queue its replay; 0 when there is none. */
static int queue_replay(struct prewarm *p, struct pw_unit *u)
{
	_cleanup_free_ char *buf = NULL;
	struct log_fields f = LOG_FIELDS_INIT;
	struct pw_job *j;
	char name[300];
	const char *why;
	unsigned line;
	uint64_t budget, want;
	size_t len;
	int dfd, r;

	if (u->queued)
		return 0;
	dfd = dir_open(p, false);
	if (dfd < 0 || prewarm_record_filename(u->key, name, sizeof(name)) < 0)
		return 0;
	r = read_file_at(dfd, name, PREWARM_RECORD_MAX_BYTES + 1, &buf, &len);
	if (r == -ENOENT)
		return 0;
	j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->u = u;
	f.unit = u->key;
	if (r < 0 || prewarm_record_parse(buf, len, &j->rec, &why, &line) < 0 || !streq(j->rec.unit, u->key)) {
		if (r >= 0 && j->rec.unit) {
			why = "it names another unit";
			line = 2;
			prewarm_record_done(&j->rec);
		} else if (r < 0) {
			why = r == -EFBIG ? "larger than a record may be" : "cannot be read";
			line = 0;
		}
		log_event(LOG_WARNING, MID_PREWARM_RECORD_INVALID, &f,
			  "prewarm record %s/%s dropped: line %u: %s", p->dir, name, line, why);
		(void)unlinkat(dfd, name, 0);
		u->state = "record dropped";
		free(j);
		return 0;
	}
	u->fig.recorded_bytes = prewarm_record_bytes(&j->rec);
	u->fig.recorded_files = j->rec.n_files;
	u->fig.recorded_at = j->rec.time;
	want = prewarm_record_bytes(&j->rec);
	budget = p->global_left;
	if (u->budget && u->budget < budget)
		budget = u->budget;
	r = prewarm_plan(&j->rec, budget, &j->steps, &j->n_steps, &j->planned);
	j->fds = malloc((j->rec.n_files ? j->rec.n_files : 1) * sizeof(int));
	j->piece = calloc(j->rec.n_files ? j->rec.n_files : 1, sizeof(uint64_t));
	if (r < 0 || !j->fds || !j->piece) {
		job_free(j);
		return -ENOMEM;
	}
	for (size_t i = 0; i < j->rec.n_files; i++)
		j->fds[i] = -2;
	p->global_left -= j->planned;
	if (j->planned < want && (!u->budget || budget < u->budget))
		j->skipped = want - j->planned; /* the global budget, not the unit's, cut it */
	if (p->jobs_tail)
		p->jobs_tail->next = j;
	else
		p->jobs = j;
	p->jobs_tail = j;
	u->queued = true;
	u->state = "replaying";
	if (sd_event_source_get_enabled(p->replay_timer, &r) >= 0 && r == SD_EVENT_OFF)
		(void)event_timer_set(p->replay_timer, event_now(p->env.event));
	return 1;
}

void prewarm_process_start(struct prewarm *p, pid_t pid, int proc_pid_fd, const char *key,
			   const struct rule_settings *s)
{
	struct pw_proc *pp;
	struct pw_unit *u;

	if (!p || !key || s->prewarm != PREWARM_YES || proc_pid_fd < 0 || hashmap_get(&p->procs, INT_TO_KEY(pid)))
		return;
	u = unit_get(p, key);
	if (!u)
		return;
	pp = calloc(1, sizeof(*pp));
	if (!pp)
		return;
	pp->pid = pid;
	pp->u = u;
	pp->proc_pid_fd = fcntl(proc_pid_fd, F_DUPFD_CLOEXEC, 3);
	if (pp->proc_pid_fd < 0 || hashmap_put(&p->procs, INT_TO_KEY(pid), pp) < 0) {
		closep(&pp->proc_pid_fd);
		free(pp);
		return;
	}
	u->budget = s->prewarm_budget.set ? budget_resolve(&s->prewarm_budget, p->mem_total) : 0;
	if (u->n_procs++ == 0 && !u->n_cgroups) {
		u->state = "recording";
		if (u->stop_due) {
			/* Back before its stop was written: one run goes on,
			 * its text as resident as it was. */
			u->stop_due = false;
		} else {
			u->sampled = false;
			(void)queue_replay(p, u);
		}
	}
	if (p->procs.n_items == 1)
		arm_record_timer(p);
}

void prewarm_cgroup_start(struct prewarm *p, const char *key, const char *cgroup, const struct rule_settings *s)
{
	struct pw_unit *u;

	if (!p || !key || !cgroup || s->prewarm != PREWARM_YES)
		return;
	u = unit_get(p, key);
	if (!u || (!u->cgroup && !(u->cgroup = strdup(cgroup))))
		return;
	u->budget = s->prewarm_budget.set ? budget_resolve(&s->prewarm_budget, p->mem_total) : 0;
	p->n_cgroups++;
	if (u->n_cgroups++ == 0 && !u->n_procs) {
		u->state = "recording";
		if (u->stop_due) {
			u->stop_due = false; /* back before its stop was written */
		} else {
			u->sampled = false;
			(void)queue_replay(p, u);
		}
	}
	if (p->n_cgroups == 1 && !p->procs.n_items)
		arm_record_timer(p);
}

void prewarm_cgroup_end(struct prewarm *p, const char *key)
{
	struct pw_unit *u = p && key ? hashmap_get(&p->units, key) : NULL;

	if (!u || !u->n_cgroups)
		return;
	p->n_cgroups--;
	if (--u->n_cgroups > 0)
		return;
	free(u->cgroup);
	u->cgroup = NULL;
	if (u->n_procs)
		return;
	u->stop_due = true;
	(void)event_source_enable(p->stopped, SD_EVENT_ONESHOT);
}

void prewarm_process_end(struct prewarm *p, pid_t pid)
{
	struct pw_proc *pp;
	struct pw_unit *u;

	if (!p)
		return;
	pp = hashmap_remove(&p->procs, INT_TO_KEY(pid));
	if (!pp)
		return;
	u = pp->u;
	closep(&pp->proc_pid_fd);
	free(pp);
	if (--u->n_procs > 0 || u->n_cgroups)
		return;
	/* The unit stopped: what it used goes on record, soon, from the
	 * stopped source (never from here: the exec path). */
	u->stop_due = true;
	(void)event_source_enable(p->stopped, SD_EVENT_ONESHOT);
}

/* The units that stopped: what they used is on record; the next run
 * starts from the record again. */
static int on_stopped(sd_event_source *s, void *userdata)
{
	struct prewarm *p = userdata;
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	(void)s;
	while ((e = hashmap_next(&p->units, &i, e))) {
		struct pw_unit *u = e->value;

		if (!u->stop_due)
			continue;
		u->stop_due = false;
		unit_write(p, u, true);
		if (!u->queued) {
			unit_drop_files(u);
			u->dirty = false;
		}
		if (u->state && streq(u->state, "recording"))
			u->state = "recorded";
	}
	return 0;
}

void prewarm_replay_all(struct prewarm *p)
{
	struct dirent *de;
	DIR *d;
	int dfd;

	if (!p)
		return;
	dfd = dir_open(p, false);
	if (dfd < 0 || opendir_at(dfd, &d) < 0)
		return;
	while ((de = readdir(d))) {
		_cleanup_free_ char *buf = NULL;
		struct prewarm_record rec;
		const char *why;
		unsigned line;
		size_t len;
		struct pw_unit *u;

		if (de->d_name[0] == '.' || !strstr(de->d_name, ".prewarm"))
			continue;
		/* The unit's name is in the record; a broken one is dropped
		 * by queue_replay() when its unit starts. */
		if (read_file_at(dfd, de->d_name, PREWARM_RECORD_MAX_BYTES + 1, &buf, &len) < 0)
			continue;
		if (prewarm_record_parse(buf, len, &rec, &why, &line) < 0) {
			struct log_fields f = LOG_FIELDS_INIT;

			log_event(LOG_WARNING, MID_PREWARM_RECORD_INVALID, &f,
				  "prewarm record %s/%s dropped: line %u: %s", p->dir, de->d_name, line, why);
			(void)unlinkat(dfd, de->d_name, 0);
			continue;
		}
		u = unit_get(p, rec.unit);
		prewarm_record_done(&rec);
		if (u && !u->queued && u->n_procs == 0)
			(void)queue_replay(p, u);
	}
	closedir(d);
}

int prewarm_new(const struct prewarm_env *env, struct prewarm **ret)
{
	struct prewarm *p = calloc(1, sizeof(*p));
	long page = sysconf(_SC_PAGESIZE);
	int r;

	if (!p)
		return -ENOMEM;
	p->env = *env;
	p->dir_fd = -1;
	p->use_query = true;
	p->page_size = page > 0 ? (uint64_t)page : 4096;
	hashmap_init(&p->units, hash_string, equal_string);
	hashmap_init(&p->procs, hash_int, equal_int);
	p->dir = strdup(env->dir);
	if (!p->dir) {
		prewarm_free(p);
		return -ENOMEM;
	}
	if (residency_mem_total(env->proc_fd, &p->mem_total) < 0)
		p->mem_total = 0;
	p->global_left = budget_resolve(&env->settings->prewarm_budget, p->mem_total);
	r = event_add_timer(env->event, &p->record_timer, "prewarm-record", on_record_timer, p);
	if (r >= 0)
		r = event_add_timer(env->event, &p->replay_timer, "prewarm-replay", on_replay_timer, p);
	if (r >= 0)
		r = event_add_defer(env->event, &p->stopped, "prewarm-stopped", on_stopped, p);
	if (r >= 0)
		r = sd_event_source_set_priority(p->stopped, SD_EVENT_PRIORITY_IDLE);
	if (r < 0) {
		prewarm_free(p);
		return r;
	}
	*ret = p;
	return 0;
}

struct prewarm *prewarm_free(struct prewarm *p)
{
	struct hashmap_entry *e;
	struct pw_proc *pp;
	struct pw_unit *u;
	size_t i;

	if (!p)
		return NULL;
	/* What the running units used until now is on record for the next
	 * start (the daemon's, or theirs); so is what the stopped ones did. */
	if (p->stopped)
		on_stopped(NULL, p);
	if (p->procs.n_items || p->n_cgroups) {
		sample_all(p);
		e = NULL;
		i = 0;
		while ((e = hashmap_next(&p->units, &i, e)))
			if (((struct pw_unit *)e->value)->n_procs || ((struct pw_unit *)e->value)->n_cgroups)
				unit_write(p, e->value, true);
	}
	while (p->jobs) {
		struct pw_job *j = p->jobs;

		p->jobs = j->next;
		job_free(j);
	}
	for (size_t cursor = 0; (pp = hashmap_steal(&p->procs, &cursor));) {
		closep(&pp->proc_pid_fd);
		free(pp);
	}
	for (size_t cursor = 0; (u = hashmap_steal(&p->units, &cursor));)
		unit_free(u);
	hashmap_done(&p->procs);
	hashmap_done(&p->units);
	sd_event_source_disable_unref(p->record_timer);
	sd_event_source_disable_unref(p->replay_timer);
	sd_event_source_disable_unref(p->stopped);
	closep(&p->dir_fd);
	free(p->dir);
	free(p);
	return NULL;
}

int prewarm_report(struct prewarm *p, struct prewarm_unit_report **ret, size_t *ret_n)
{
	struct prewarm_unit_report *r;
	struct hashmap_entry *e = NULL;
	size_t i = 0, n = 0;

	if (!p) {
		*ret = NULL;
		*ret_n = 0;
		return 0;
	}
	r = calloc(p->units.n_items ? p->units.n_items : 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	while ((e = hashmap_next(&p->units, &i, e))) {
		struct pw_unit *u = e->value;

		r[n] = u->fig;
		r[n].key = u->key;
		r[n].state = u->state;
		n++;
	}
	*ret = r;
	*ret_n = n;
	return 0;
}
