/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Text major faults per unit. The patched kernel counts them; elsewhere
 * the estimate is: the unit's major faults (memory.stat pgmajfault, or
 * its processes' majflt without a memory controller on cgroup2) times
 * the share of them that were text, the share taken from which of the
 * unit's file mappings had pages come back since the last look (exec
 * mappings or others), seen with mincore(). Why this and what it misses:
 * execguardd(8), TEXT FAULTS. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "hashmap.h"
#include "maps.h"
#include "procfs.h"
#include "residency.h"
#include "textfault.h"
#include "util.h"

/* Bounds on one sample of one unit (execguardd(8)): processes whose
 * majflt is read, processes whose maps are read (new ones first, and
 * every MAPS_ROTATE_EVERY samples one of the others in turn, for
 * libraries loaded later), file ranges and pages watched. A range not
 * seen in any maps read for RANGE_TTL samples is dropped. */
#define MAX_PROCS 4096
#define MAPS_PER_SAMPLE 4
#define MAPS_ROTATE_EVERY 8
#define MAX_RANGES 256
#define MAX_PAGES (64 * 1024)
#define RANGE_TTL 256
/* Files opened for mincore(), across units (each once); /proc/PID/stat
 * files kept open. */
#define MAX_FILES 4096
#define MAX_STAT_FDS 16384
/* mincore() results of a file range reused within this time (one round
 * of reads of many units), of this many ranges per file. */
#define FILE_LOOK_REUSE_USEC 250000
#define FILE_LOOKS 4
/* Files up to this size are looked at whole, once for all their ranges. */
#define WHOLE_FILE_PAGES 16384
/* How much the previous share weighs against one interval's windows: a
 * few windows do not swing it. */
#define SHARE_PRIOR_WINDOWS 2.0

const char *text_fault_source_to_string(enum text_fault_source s)
{
	switch (s) {
	case TEXT_FAULTS_KERNEL:
		return "kernel";
	case TEXT_FAULTS_ESTIMATE:
		return "estimate";
	}
	return "unknown";
}

/* ---- pure parts ---- */

int text_faults_parse_stat(const char *buf, size_t len, uint64_t *ret_majflt, uint64_t *ret_start)
{
	unsigned long long maj, start;
	char tmp[512];

	if (procfs_stat_tail(buf, len, tmp, sizeof(tmp)) < 0)
		return -EINVAL;
	/* state ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime priority nice num_threads
	 * itrealvalue starttime */
	if (sscanf(tmp, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %llu %*u %*u %*u %*d %*d %*d %*d %*d %*d %llu",
		   &maj, &start) != 2)
		return -EINVAL;
	*ret_majflt = maj;
	*ret_start = start;
	return 0;
}

uint64_t text_faults_proc_delta(const struct text_faults_proc *before, size_t n_before,
				uint64_t before_ticks, const struct text_faults_proc *now,
				size_t n_now)
{
	uint64_t sum = 0;
	size_t i = 0;

	for (size_t k = 0; k < n_now; k++) {
		const struct text_faults_proc *p = &now[k];

		while (i < n_before && before[i].pid < p->pid)
			i++;
		if (i < n_before && before[i].pid == p->pid && before[i].start_ticks == p->start_ticks) {
			if (p->majflt > before[i].majflt)
				sum += p->majflt - before[i].majflt;
		} else if (p->start_ticks >= before_ticks) {
			/* Born since the last look (a reused pid too). */
			sum += p->majflt;
		}
	}
	return sum;
}

static const char *skip_blanks(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	return p;
}

static int hex_field(const char **p, const char *end, char stop, uint64_t *ret)
{
	uint64_t v = 0;
	const char *s = *p;

	while (s < end && *s != stop) {
		int d;

		if (*s >= '0' && *s <= '9')
			d = *s - '0';
		else if (*s >= 'a' && *s <= 'f')
			d = *s - 'a' + 10;
		else
			return -EINVAL;
		if (v >> 60)
			return -EINVAL;
		v = v * 16 + (uint64_t)d;
		s++;
	}
	if (s == *p || s >= end)
		return -EINVAL;
	*p = s + 1;
	*ret = v;
	return 0;
}

int text_faults_parse_maps_line(const char *line, size_t len, struct text_faults_range *ret)
{
	const char *p = line, *end = line + len, *perms;
	uint64_t start, stop, offset, maj, min, inode = 0;
	const char *name;
	size_t nl;

	while (end > p && (end[-1] == '\n'))
		end--;
	if (hex_field(&p, end, '-', &start) < 0 || hex_field(&p, end, ' ', &stop) < 0 || stop < start)
		return -EINVAL;
	if (end - p < 5 || p[4] != ' ')
		return -EINVAL;
	perms = p;
	p += 5;
	if (hex_field(&p, end, ' ', &offset) < 0 || hex_field(&p, end, ':', &maj) < 0 ||
	    hex_field(&p, end, ' ', &min) < 0 || maj > UINT32_MAX || min > UINT32_MAX)
		return -EINVAL;
	if (p >= end || *p < '0' || *p > '9')
		return -EINVAL;
	while (p < end && *p >= '0' && *p <= '9') {
		if (inode > (UINT64_MAX - 9) / 10)
			return -EINVAL;
		inode = inode * 10 + (uint64_t)(*p++ - '0');
	}
	if (p < end && *p != ' ')
		return -EINVAL;
	name = skip_blanks(p, end);
	nl = (size_t)(end - name);
	/* Readable file pages only: not anonymous memory, kernel areas
	 * ("[vdso]"), memfd or SysV shm (shmem, not evicted like files). */
	if (perms[0] != 'r' || inode == 0 || nl == 0 || name[0] != '/')
		return 0;
	if (nl >= 10 && memcmp(name, "/memfd:", 7) == 0)
		return 0;
	if (nl >= 8 && memcmp(name, "/SYSV", 5) == 0)
		return 0;
	*ret = (struct text_faults_range){
		.start = start,
		.end = stop,
		.offset = offset,
		.inode = inode,
		.dev_major = (uint32_t)maj,
		.dev_minor = (uint32_t)min,
		.exec = perms[2] == 'x',
	};
	ret->path = memdup_str(name, nl);
	return ret->path ? 1 : -ENOMEM;
}

void text_faults_residency_step(uint64_t *bits, const unsigned char *vec, size_t n_pages,
				size_t window_pages, struct text_faults_residency_delta *ret)
{
	struct text_faults_residency_delta d = { 0 };
	size_t covered_to = 0; /* the current window covers pages below this */

	if (window_pages == 0)
		window_pages = 1;
	for (size_t i = 0; i < n_pages; i++) {
		bool was = (bits[i / 64] >> (i % 64)) & 1, is = vec[i] & 1;

		if (was && !is)
			d.evicted++;
		if (!was && is) {
			d.came_back++;
			if (i >= covered_to) {
				d.windows++;
				covered_to = i + window_pages;
			}
		}
		/* A read-around window reads every page of it that was not
		 * cached: one that is not resident now ends it, and a page
		 * beyond came back by another read (a fault without read-around,
		 * as the kernel does for a file after many misses). */
		if (!is && covered_to > i)
			covered_to = i;
		if (is)
			bits[i / 64] |= UINT64_C(1) << (i % 64);
		else
			bits[i / 64] &= ~(UINT64_C(1) << (i % 64));
	}
	*ret = d;
}

uint64_t text_faults_estimate_step(struct text_faults_estimate *e, uint64_t majors,
				   uint64_t text_windows, uint64_t other_windows)
{
	double add;

	if (!(e->share >= 0.0 && e->share <= 1.0))
		e->share = 1.0;
	if (text_windows + other_windows)
		e->share = ((double)text_windows + SHARE_PRIOR_WINDOWS * e->share) /
			   ((double)(text_windows + other_windows) + SHARE_PRIOR_WINDOWS);
	add = (double)majors * e->share + e->carry;
	if (!(add >= 0.0) || add >= 0x1p63)
		add = 0.0;
	e->faults += (uint64_t)add;
	e->carry = add - (double)(uint64_t)add;
	return e->faults;
}

/* ---- state and I/O ---- */

/* A file opened and mapped once for mincore(), shared by the units'
 * ranges on it. */
struct tf_file {
	uint64_t key[2]; /* dev, inode: the hash key */
	int fd;
	void *addr;
	uint64_t len;
	unsigned refs;
	/* The last mincore() results on it: units mapping the same library
	 * read in one round share one call per range. */
	struct tf_look {
		uint64_t off, pages, usec;
		unsigned char *vec;
	} looks[FILE_LOOKS];
	unsigned next_look;
};

struct tf_range {
	uint64_t dev, ino, offset, pages;
	bool exec, baseline;
	struct tf_file *file; /* NULL: cannot be watched (tmpfs, gone) */
	uint64_t *bits;
	uint64_t last_seen;
};

struct tf_unit {
	char *key, *cgroup;
	struct tf_range *ranges;
	size_t n_ranges;
	uint64_t pages;
	struct text_faults_proc *procs;
	int *stat_fds; /* /proc/PID/stat of procs[i] kept open, or -1 */
	size_t n_procs;
	uint64_t sample_ticks;
	uint64_t n_samples;
	size_t rotate;
	bool memcg_have;
	uint64_t memcg_last;
	/* Kernel counter: a restarted cgroup starts again at 0; the reading
	 * must not. */
	bool kernel_have;
	uint64_t kernel_last, kernel_base;
	struct text_faults_estimate est;
	struct text_faults_unit_info info;
	bool have_reading;
	struct text_fault_reading reading;
	uint64_t sampled_usec;
};

struct text_faults {
	int cgroup_root_fd, proc_fd;
	struct hashmap units; /* key -> tf_unit */
	struct hashmap files; /* (dev, ino) -> tf_file */
	bool force_estimate;
	uint64_t min_interval_usec;
	size_t page_size;
	long clk_tck;
	size_t n_stat_fds;
};

static uint64_t hash_file(const void *key)
{
	const uint64_t *k = key;

	return (k[0] * 0x9e3779b97f4a7c15ULL) ^ (k[1] * 0xc2b2ae3d27d4eb4fULL);
}

static bool equal_file(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] == y[0] && x[1] == y[1];
}

int text_faults_new(int cgroup_root_fd, int proc_fd, struct text_faults **ret)
{
	struct text_faults *tf = calloc(1, sizeof(*tf));

	if (!tf)
		return -ENOMEM;
	tf->cgroup_root_fd = cgroup_root_fd;
	tf->proc_fd = proc_fd;
	tf->min_interval_usec = TEXT_FAULTS_MIN_INTERVAL_USEC;
	tf->page_size = (size_t)sysconf(_SC_PAGESIZE);
	tf->clk_tck = sysconf(_SC_CLK_TCK);
	if (tf->clk_tck <= 0)
		tf->clk_tck = 100;
	hashmap_init(&tf->units, hash_string, equal_string);
	hashmap_init(&tf->files, hash_file, equal_file);
	*ret = tf;
	return 0;
}

static void file_unref(struct text_faults *tf, struct tf_file *f)
{
	if (!f || --f->refs)
		return;
	hashmap_remove(&tf->files, f->key);
	residency_unmap(f->addr, f->len);
	closep(&f->fd);
	for (size_t i = 0; i < FILE_LOOKS; i++)
		free(f->looks[i].vec);
	free(f);
}

static void range_done(struct text_faults *tf, struct tf_range *r)
{
	file_unref(tf, r->file);
	free(r->bits);
}

static void close_stat_fds(struct text_faults *tf, int *fds, size_t n)
{
	for (size_t i = 0; fds && i < n; i++)
		if (fds[i] >= 0) {
			close(fds[i]);
			tf->n_stat_fds--;
		}
}

static void unit_free(struct text_faults *tf, struct tf_unit *u)
{
	for (size_t i = 0; i < u->n_ranges; i++)
		range_done(tf, &u->ranges[i]);
	free(u->ranges);
	close_stat_fds(tf, u->stat_fds, u->n_procs);
	free(u->stat_fds);
	free(u->procs);
	free(u->key);
	free(u->cgroup);
	free(u);
}

struct text_faults *text_faults_free(struct text_faults *tf)
{
	struct tf_unit *u;
	size_t cursor = 0;

	if (!tf)
		return NULL;
	while ((u = hashmap_steal(&tf->units, &cursor)))
		unit_free(tf, u);
	hashmap_done(&tf->units);
	hashmap_done(&tf->files);
	free(tf);
	return NULL;
}

void text_faults_forget(struct text_faults *tf, const char *key)
{
	struct tf_unit *u;

	if (!tf || !key)
		return;
	u = hashmap_remove(&tf->units, key);
	if (u)
		unit_free(tf, u);
}

int text_faults_last(struct text_faults *tf, const char *key, struct text_fault_reading *ret)
{
	struct tf_unit *u = tf && key ? hashmap_get(&tf->units, key) : NULL;

	if (!u || !u->have_reading)
		return -ENOENT;
	*ret = u->reading;
	return 0;
}

void text_faults_prune(struct text_faults *tf, uint64_t now_usec, uint64_t idle_usec)
{
	struct hashmap_entry *e = NULL;
	struct tf_unit **stale;
	size_t i = 0, n = 0;

	if (!tf || !tf->units.n_items)
		return;
	/* Collected first: the map must not change while it is walked. */
	stale = calloc(tf->units.n_items, sizeof(*stale));
	if (!stale)
		return;
	while ((e = hashmap_next(&tf->units, &i, e))) {
		struct tf_unit *u = e->value;

		if (!u->have_reading || now_usec - u->sampled_usec > idle_usec)
			stale[n++] = u;
	}
	for (size_t k = 0; k < n; k++) {
		hashmap_remove(&tf->units, stale[k]->key);
		unit_free(tf, stale[k]);
	}
	free(stale);
}

void text_faults_set_force_estimate(struct text_faults *tf, bool force)
{
	tf->force_estimate = force;
}

void text_faults_set_min_interval(struct text_faults *tf, uint64_t usec)
{
	tf->min_interval_usec = usec;
}

int text_faults_unit_info(struct text_faults *tf, const char *key, struct text_faults_unit_info *ret)
{
	struct tf_unit *u = hashmap_get(&tf->units, key);

	if (!u)
		return -ENOENT;
	*ret = u->info;
	ret->text_share = u->est.share;
	return 0;
}

static uint64_t clock_usec(clockid_t c)
{
	struct timespec ts;

	clock_gettime(c, &ts);
	return (uint64_t)ts.tv_sec * 1000000ULL + (uint64_t)ts.tv_nsec / 1000;
}

static int cgroup_file(struct text_faults *tf, const char *cgroup, const char *name, size_t max,
		       char **buf, size_t *len)
{
	const char *rel;
	char path[4096];

	if (cgroup_relative(cgroup, &rel) < 0)
		return -EINVAL;
	if (snprintf(path, sizeof(path), "%s%s%s", rel, rel[0] ? "/" : "", name) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	return read_file_at(tf->cgroup_root_fd, path, max, buf, len);
}

static int cmp_pid(const void *a, const void *b)
{
	const struct text_faults_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* The index of pid in the unit's last sample, or -1. */
static ssize_t had_pid(const struct tf_unit *u, int pid)
{
	size_t lo = 0, hi = u->n_procs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (u->procs[mid].pid == pid)
			return (ssize_t)mid;
		if (u->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

/* majflt and start of one process. The unit keeps each process's
 * /proc/PID/stat open between samples (the path lookup was most of a
 * read's cost); a reused pid is another /proc entry, so a kept fd that
 * fails to read means the process is gone and the pid is opened anew. */
static int proc_stat(struct text_faults *tf, struct tf_unit *u, struct text_faults_proc *p, int *fd)
{
	char buf[1024], path[32];
	ssize_t i = had_pid(u, p->pid), n = -1;

	*fd = -1;
	if (i >= 0 && u->stat_fds[i] >= 0) {
		*fd = u->stat_fds[i];
		u->stat_fds[i] = -1;
		n = pread(*fd, buf, sizeof(buf) - 1, 0);
		if (n <= 0) {
			close(*fd);
			tf->n_stat_fds--;
			*fd = -1;
		}
	}
	if (*fd < 0) {
		snprintf(path, sizeof(path), "%d/stat", p->pid);
		*fd = openat(tf->proc_fd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		if (*fd < 0)
			return -errno;
		n = pread(*fd, buf, sizeof(buf) - 1, 0);
		if (n > 0 && tf->n_stat_fds < MAX_STAT_FDS)
			tf->n_stat_fds++;
		else {
			close(*fd);
			*fd = -1;
		}
	}
	if (n <= 0)
		return -ESRCH;
	return text_faults_parse_stat(buf, (size_t)n, &p->majflt, &p->start_ticks);
}

/* The pids of cgroup.procs, sorted; majflt and start filled when
 * with_stat (processes gone meanwhile are left out), with the fds kept
 * for them (-1: none) into *ret_fds. */
static int read_procs(struct text_faults *tf, struct tf_unit *u, bool with_stat,
		      struct text_faults_proc **ret, int **ret_fds, size_t *ret_n)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_free_ struct text_faults_proc *v = NULL;
	_cleanup_free_ int *fds = NULL;
	size_t len, n = 0, k = 0, cap = 0;
	int r;

	r = cgroup_file(tf, u->cgroup, "cgroup.procs", 4 << 20, &buf, &len);
	if (r < 0)
		return r == -ENOENT || r == -ENOTDIR ? -ENOENT : r;
	for (char *p = buf, *nl; p < buf + len && n < MAX_PROCS; p = nl + 1) {
		uint64_t pid;

		nl = memchr(p, '\n', (size_t)(buf + len - p));
		if (!nl)
			nl = buf + len;
		if (procfs_parse_u64(p, (size_t)(nl - p), &pid) < 0 || pid == 0 || pid > INT32_MAX)
			continue;
		if (n == cap) {
			struct text_faults_proc *g = realloc(v, (cap ? 2 * cap : 64) * sizeof(*v));

			if (!g)
				return -ENOMEM;
			v = g;
			cap = cap ? 2 * cap : 64;
		}
		v[n++] = (struct text_faults_proc){ .pid = (int)pid };
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_pid);
	fds = malloc((n ? n : 1) * sizeof(int));
	if (!fds)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		fds[k] = -1;
		if (with_stat && proc_stat(tf, u, &v[i], &fds[k]) < 0) {
			if (fds[k] >= 0) {
				close(fds[k]);
				tf->n_stat_fds--;
			}
			continue;
		}
		v[k++] = v[i];
	}
	*ret = TAKE_PTR(v);
	*ret_fds = TAKE_PTR(fds);
	*ret_n = k;
	return 0;
}

static struct tf_file *file_get(struct text_faults *tf, int pid, const struct text_faults_range *m)
{
	uint64_t key[2] = { ((uint64_t)m->dev_major << 20) | m->dev_minor, m->inode };
	struct tf_file *f = hashmap_get(&tf->files, key);
	_cleanup_close_ int pfd = -1, fd = -1;
	struct exec_mapping em;
	const char *why;
	struct stat st;
	char name[32];
	void *addr;

	if (f) {
		f->refs++;
		return f;
	}
	if (tf->files.n_items >= MAX_FILES)
		return NULL;
	snprintf(name, sizeof(name), "%d", pid);
	pfd = openat(tf->proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return NULL;
	em = (struct exec_mapping){
		.start = m->start, .end = m->end, .offset = m->offset, .inode = m->inode,
		.dev_major = m->dev_major, .dev_minor = m->dev_minor,
		.kind = MAPPING_FILE, .path = m->path,
	};
	fd = residency_open(pfd, &em, &why);
	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size <= 0)
		return NULL;
	if (residency_map(fd, 0, (uint64_t)st.st_size, &addr) < 0)
		return NULL;
	f = calloc(1, sizeof(*f));
	if (!f) {
		residency_unmap(addr, (uint64_t)st.st_size);
		return NULL;
	}
	*f = (struct tf_file){
		.key = { key[0], key[1] }, .fd = TAKE_FD(fd), .addr = addr,
		.len = (uint64_t)st.st_size, .refs = 1,
	};
	if (hashmap_put(&tf->files, f->key, f) < 0) {
		f->refs = 0;
		residency_unmap(f->addr, f->len);
		closep(&f->fd);
		free(f);
		return NULL;
	}
	return f;
}

/* A range of a maps line into the unit's set (once per file range). */
static void unit_add_range(struct text_faults *tf, struct tf_unit *u, int pid,
			   const struct text_faults_range *m)
{
	uint64_t dev = ((uint64_t)m->dev_major << 20) | m->dev_minor;
	uint64_t pages = (m->end - m->start + tf->page_size - 1) / tf->page_size;
	struct tf_range *r;

	for (size_t i = 0; i < u->n_ranges; i++) {
		r = &u->ranges[i];
		if (r->dev == dev && r->ino == m->inode && r->offset == m->offset && r->pages == pages) {
			r->last_seen = u->n_samples;
			return;
		}
	}
	if (u->n_ranges >= MAX_RANGES || u->pages + pages > MAX_PAGES || pages == 0)
		return;
	r = realloc(u->ranges, (u->n_ranges + 1) * sizeof(*r));
	if (!r)
		return;
	u->ranges = r;
	r = &u->ranges[u->n_ranges];
	*r = (struct tf_range){
		.dev = dev, .ino = m->inode, .offset = m->offset, .pages = pages,
		.exec = m->exec, .baseline = true, .last_seen = u->n_samples,
	};
	r->bits = calloc((pages + 63) / 64, sizeof(uint64_t));
	if (!r->bits)
		return;
	/* A range that cannot be watched (tmpfs, a file not openable) stays
	 * in the set without a file, so it is not opened again each time. */
	r->file = file_get(tf, pid, m);
	u->n_ranges++;
	u->pages += pages;
}

/* The file ranges of one process's maps into the unit's set: exec ones
 * first, so that the page bound leaves out data rather than text. */
static void unit_read_maps(struct text_faults *tf, struct tf_unit *u, int pid)
{
	_cleanup_free_ char *buf = NULL;
	char path[32];
	size_t len;

	snprintf(path, sizeof(path), "%d/maps", pid);
	if (read_file_at(tf->proc_fd, path, 16 << 20, &buf, &len) < 0)
		return;
	for (int pass = 0; pass < 2; pass++)
		for (char *p = buf, *nl; p < buf + len; p = nl + 1) {
			struct text_faults_range m;

			nl = memchr(p, '\n', (size_t)(buf + len - p));
			if (!nl)
				nl = buf + len;
			if (text_faults_parse_maps_line(p, (size_t)(nl - p), &m) <= 0)
				continue;
			if (m.exec == (pass == 0))
				unit_add_range(tf, u, pid, &m);
			free(m.path);
		}
}

/* Drop ranges no maps read has shown for a while. */
static void unit_expire_ranges(struct text_faults *tf, struct tf_unit *u)
{
	size_t k = 0;

	for (size_t i = 0; i < u->n_ranges; i++) {
		struct tf_range *r = &u->ranges[i];

		if (u->n_samples - r->last_seen > RANGE_TTL) {
			u->pages -= r->pages;
			range_done(tf, r);
			continue;
		}
		u->ranges[k++] = *r;
	}
	u->n_ranges = k;
}

/* mincore() of every watched range: the windows that came back, text
 * and other. */
/* Which pages of [off, off + pages) of f are resident now: a look of
 * the same range by another unit moments ago, else mincore(). */
static const unsigned char *file_look(struct text_faults *tf, struct tf_file *f, uint64_t off,
				      uint64_t pages, uint64_t now)
{
	struct tf_look *l;
	uint64_t len = pages * tf->page_size;

	for (size_t i = 0; i < FILE_LOOKS; i++) {
		l = &f->looks[i];
		if (l->vec && l->off == off && l->pages == pages && now - l->usec < FILE_LOOK_REUSE_USEC)
			return l->vec;
	}
	l = &f->looks[f->next_look++ % FILE_LOOKS];
	if (!l->vec || l->pages < pages) {
		unsigned char *v = realloc(l->vec, pages);

		if (!v)
			return NULL;
		l->vec = v;
	}
	l->off = off;
	l->pages = pages;
	l->usec = now;
	/* Past the end of a file that shrank: not resident. */
	memset(l->vec, 0, pages);
	if (off + len > f->len)
		len = f->len - off;
	if (residency_mincore((char *)f->addr + off, len, l->vec) < 0) {
		l->pages = 0;
		return NULL;
	}
	return l->vec;
}

/* mincore() of every watched range: the windows that came back, text
 * and other. */
static void unit_residency(struct text_faults *tf, struct tf_unit *u, uint64_t now,
			   uint64_t *ret_text, uint64_t *ret_other)
{
	*ret_text = *ret_other = 0;
	for (size_t i = 0; i < u->n_ranges; i++) {
		struct tf_range *r = &u->ranges[i];
		struct text_faults_residency_delta d;
		const unsigned char *vec;
		uint64_t file_pages, first;

		if (!r->file || r->offset >= r->file->len)
			continue;
		file_pages = (r->file->len + tf->page_size - 1) / tf->page_size;
		first = r->offset / tf->page_size;
		if (file_pages <= WHOLE_FILE_PAGES && first + r->pages <= file_pages) {
			/* The segments of a binary lie side by side: one call
			 * for all of them. */
			vec = file_look(tf, r->file, 0, file_pages, now);
			if (vec)
				vec += first;
		} else
			vec = file_look(tf, r->file, first * tf->page_size, r->pages, now);
		if (!vec)
			continue;
		text_faults_residency_step(r->bits, vec, r->pages, TEXT_FAULTS_WINDOW_PAGES, &d);
		if (r->baseline) {
			/* The first look: nothing to compare with. */
			r->baseline = false;
			continue;
		}
		u->info.evicted += d.evicted;
		u->info.came_back += d.came_back;
		if (r->exec)
			*ret_text += d.windows;
		else
			*ret_other += d.windows;
	}
}

static int unit_sample_estimate(struct text_faults *tf, struct tf_unit *u, const char *stat_buf,
				size_t stat_len)
{
	_cleanup_free_ struct text_faults_proc *procs = NULL;
	_cleanup_free_ int *fds = NULL;
	uint64_t majors = 0, memcg = 0, tw, ow, ticks;
	bool from_memcg, first = u->n_samples == 0;
	size_t n, maps_left = MAPS_PER_SAMPLE;
	int r;

	from_memcg = stat_buf && procfs_field_u64(stat_buf, stat_len, "pgmajfault", ' ', &memcg) == 0;
	ticks = clock_usec(CLOCK_BOOTTIME) * (uint64_t)tf->clk_tck / 1000000ULL;
	r = read_procs(tf, u, !from_memcg, &procs, &fds, &n);
	if (r < 0)
		return r;
	if (!from_memcg && n == 0 && u->n_procs == 0 && !stat_buf) {
		/* No memory controller and no process whose figures can be read. */
		_cleanup_free_ struct text_faults_proc *any = NULL;
		_cleanup_free_ int *any_fds = NULL;
		size_t na;

		if (read_procs(tf, u, false, &any, &any_fds, &na) == 0 && na > 0)
			return -ENODATA;
	}

	if (from_memcg) {
		/* A new cgroup of the same name starts again from 0. */
		if (u->memcg_have)
			majors = memcg >= u->memcg_last ? memcg - u->memcg_last : memcg;
		u->memcg_have = true;
		u->memcg_last = memcg;
	} else {
		majors = text_faults_proc_delta(u->procs, u->n_procs, u->sample_ticks, procs, n);
		u->memcg_have = false;
	}

	u->n_samples++;
	/* New processes' maps first, then one of the others in turn. */
	for (size_t i = 0; i < n && maps_left; i++)
		if (had_pid(u, procs[i].pid) < 0) {
			unit_read_maps(tf, u, procs[i].pid);
			maps_left--;
		}
	if (n && maps_left && u->n_samples % MAPS_ROTATE_EVERY == 0) {
		u->rotate = (u->rotate + 1) % n;
		unit_read_maps(tf, u, procs[u->rotate].pid);
	}
	/* One process's maps per sample cannot see every range of a unit of
	 * many processes within the ttl: there, ranges stay. */
	if (n > RANGE_TTL / MAPS_ROTATE_EVERY / 2)
		for (size_t i = 0; i < u->n_ranges; i++)
			u->ranges[i].last_seen = u->n_samples;
	unit_expire_ranges(tf, u);
	unit_residency(tf, u, clock_usec(CLOCK_MONOTONIC), &tw, &ow);

	free(u->procs);
	close_stat_fds(tf, u->stat_fds, u->n_procs);
	free(u->stat_fds);
	u->procs = TAKE_PTR(procs);
	u->stat_fds = TAKE_PTR(fds);
	u->n_procs = n;
	u->sample_ticks = ticks;
	if (first)
		majors = tw = ow = 0;
	u->info.majors += majors;
	u->info.text_windows += tw;
	u->info.other_windows += ow;
	u->info.majors_from_memcg = from_memcg;
	u->info.processes = n;
	u->info.ranges = u->n_ranges;
	u->info.pages = u->pages;
	text_faults_estimate_step(&u->est, majors, tw, ow);
	u->reading.faults = u->est.faults;
	u->reading.source = TEXT_FAULTS_ESTIMATE;
	return 0;
}

static struct tf_unit *unit_get(struct text_faults *tf, const char *key, const char *cgroup)
{
	struct tf_unit *u = hashmap_get(&tf->units, key);
	uint64_t carried = 0;

	if (u) {
		if (streq(u->cgroup, cgroup))
			return u;
		/* Moved: the figures of another cgroup are not comparable; the
		 * counter goes on from where it was. */
		carried = u->reading.faults;
		hashmap_remove(&tf->units, key);
		unit_free(tf, u);
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->key = strdup(key);
	u->cgroup = strdup(cgroup);
	u->est = (struct text_faults_estimate)TEXT_FAULTS_ESTIMATE_INIT;
	u->est.faults = u->kernel_base = carried;
	u->reading.faults = carried;
	u->sample_ticks = UINT64_MAX; /* no earlier sample: nobody is new */
	if (!u->key || !u->cgroup || hashmap_put(&tf->units, u->key, u) < 0) {
		unit_free(tf, u);
		return NULL;
	}
	return u;
}

int text_faults_read(struct text_faults *tf, const char *key, const char *cgroup,
		     struct text_fault_reading *ret)
{
	_cleanup_free_ char *stat = NULL;
	uint64_t now = clock_usec(CLOCK_MONOTONIC), v;
	struct tf_unit *u;
	size_t len = 0;
	const char *rel;
	int r;

	if (!tf || !key || !cgroup || cgroup_relative(cgroup, &rel) < 0)
		return -EINVAL;
	u = unit_get(tf, key, cgroup);
	if (!u)
		return -ENOMEM;
	if (u->have_reading && now - u->sampled_usec < tf->min_interval_usec) {
		*ret = u->reading;
		return 0;
	}

	r = cgroup_file(tf, cgroup, "memory.stat", 1 << 16, &stat, &len);
	if (r < 0 && r != -ENOENT)
		return r;
	if (r == -ENOENT) {
		/* No cgroup, or no memory controller on it. */
		struct stat st;
		char path[4096];

		snprintf(path, sizeof(path), "%s", rel[0] ? rel : ".");
		if (fstatat(tf->cgroup_root_fd, path, &st, 0) < 0)
			return -ENOENT;
	}

	if (stat && !tf->force_estimate &&
	    procfs_field_u64(stat, len, "pgmajfault_exec", ' ', &v) == 0) {
		if (u->kernel_have && v < u->kernel_last)
			u->kernel_base += u->kernel_last;
		u->kernel_have = true;
		u->kernel_last = v;
		u->reading.faults = u->kernel_base + v;
		u->reading.source = TEXT_FAULTS_KERNEL;
	} else {
		r = unit_sample_estimate(tf, u, stat, len);
		if (r < 0)
			return r;
	}
	u->reading.at_usec = now;
	u->sampled_usec = now;
	u->have_reading = true;
	*ret = u->reading;
	return 0;
}
