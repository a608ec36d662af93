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
 * majflt is read, processes whose maps are read (new ones first, then
 * one of the others in turn, for libraries loaded later), file ranges and
 * pages watched. A range not seen in any maps read for RANGE_TTL samples
 * is dropped. */
#define MAX_PROCS 4096
#define MAPS_PER_SAMPLE 4
#define MAX_RANGES 256
#define MAX_PAGES (64 * 1024)
#define RANGE_TTL 64
/* Files opened for mincore(), across units (each once). */
#define MAX_FILES 4096
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
	const char *close = NULL;
	char tmp[512];
	size_t l;

	/* The comm may hold ") ": the fields follow the last ')'. */
	for (size_t i = len; i > 0; i--)
		if (buf[i - 1] == ')') {
			close = buf + i - 1;
			break;
		}
	if (!close)
		return -EINVAL;
	l = (size_t)(buf + len - close - 1);
	if (l >= sizeof(tmp))
		l = sizeof(tmp) - 1;
	memcpy(tmp, close + 1, l);
	tmp[l] = '\0';
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
	unsigned char *vec;
	size_t vec_len;
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
	free(f);
}

static void range_done(struct text_faults *tf, struct tf_range *r)
{
	file_unref(tf, r->file);
	free(r->bits);
}

static void unit_free(struct text_faults *tf, struct tf_unit *u)
{
	for (size_t i = 0; i < u->n_ranges; i++)
		range_done(tf, &u->ranges[i]);
	free(u->ranges);
	free(u->procs);
	free(u->key);
	free(u->cgroup);
	free(u);
}

struct text_faults *text_faults_free(struct text_faults *tf)
{
	struct hashmap_entry *e = NULL;

	if (!tf)
		return NULL;
	for (size_t i = 0; (e = hashmap_next(&tf->units, &i, NULL)); i = 0) {
		struct tf_unit *u = e->value;

		hashmap_remove(&tf->units, u->key);
		unit_free(tf, u);
	}
	hashmap_done(&tf->units);
	hashmap_done(&tf->files);
	free(tf->vec);
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

/* The pids of cgroup.procs, sorted; majflt and start filled when
 * with_stat (processes gone meanwhile are left out). */
static int read_procs(struct text_faults *tf, const char *cgroup, bool with_stat,
		      struct text_faults_proc **ret, size_t *ret_n)
{
	_cleanup_free_ char *buf = NULL;
	_cleanup_free_ struct text_faults_proc *v = NULL;
	size_t len, n = 0, cap = 0;
	int r;

	r = cgroup_file(tf, cgroup, "cgroup.procs", 4 << 20, &buf, &len);
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
		v[n] = (struct text_faults_proc){ .pid = (int)pid };
		if (with_stat) {
			_cleanup_free_ char *st = NULL;
			char path[32];
			size_t sl;

			snprintf(path, sizeof(path), "%d/stat", (int)pid);
			if (read_file_at(tf->proc_fd, path, 4096, &st, &sl) < 0 ||
			    text_faults_parse_stat(st, sl, &v[n].majflt, &v[n].start_ticks) < 0)
				continue;
		}
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_pid);
	*ret = TAKE_PTR(v);
	*ret_n = n;
	return 0;
}

static bool had_pid(const struct tf_unit *u, int pid)
{
	size_t lo = 0, hi = u->n_procs;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (u->procs[mid].pid == pid)
			return true;
		if (u->procs[mid].pid < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
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
static void unit_residency(struct text_faults *tf, struct tf_unit *u, uint64_t *ret_text,
			   uint64_t *ret_other)
{
	*ret_text = *ret_other = 0;
	for (size_t i = 0; i < u->n_ranges; i++) {
		struct tf_range *r = &u->ranges[i];
		struct text_faults_residency_delta d;
		uint64_t off, len;

		if (!r->file || r->offset >= r->file->len)
			continue;
		off = r->offset & ~((uint64_t)tf->page_size - 1);
		len = r->pages * tf->page_size;
		if (off + len > r->file->len)
			len = r->file->len - off;
		if (r->pages > tf->vec_len) {
			unsigned char *v = realloc(tf->vec, r->pages);

			if (!v)
				continue;
			tf->vec = v;
			tf->vec_len = r->pages;
		}
		/* Past the end of a file that shrank: not resident. */
		memset(tf->vec, 0, r->pages);
		if (residency_mincore((char *)r->file->addr + off, len, tf->vec) < 0)
			continue;
		text_faults_residency_step(r->bits, tf->vec, r->pages, TEXT_FAULTS_WINDOW_PAGES, &d);
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
	uint64_t majors = 0, memcg = 0, tw, ow, ticks;
	bool from_memcg, first = u->n_samples == 0;
	size_t n, maps_left = MAPS_PER_SAMPLE;
	int r;

	from_memcg = stat_buf && procfs_field_u64(stat_buf, stat_len, "pgmajfault", ' ', &memcg) == 0;
	ticks = clock_usec(CLOCK_BOOTTIME) * (uint64_t)tf->clk_tck / 1000000ULL;
	r = read_procs(tf, u->cgroup, !from_memcg, &procs, &n);
	if (r < 0)
		return r;
	if (!from_memcg && n == 0 && u->n_procs == 0 && !stat_buf) {
		/* No memory controller and no process whose figures can be read. */
		_cleanup_free_ struct text_faults_proc *any = NULL;
		size_t na;

		if (read_procs(tf, u->cgroup, false, &any, &na) == 0 && na > 0)
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
		if (!had_pid(u, procs[i].pid)) {
			unit_read_maps(tf, u, procs[i].pid);
			maps_left--;
		}
	if (n && maps_left) {
		u->rotate = (u->rotate + 1) % n;
		unit_read_maps(tf, u, procs[u->rotate].pid);
	}
	/* One process's maps per sample cannot see every range of a unit of
	 * many processes within the ttl: there, ranges stay. */
	if (n > RANGE_TTL / 2)
		for (size_t i = 0; i < u->n_ranges; i++)
			u->ranges[i].last_seen = u->n_samples;
	unit_expire_ranges(tf, u);
	unit_residency(tf, u, &tw, &ow);

	free(u->procs);
	u->procs = TAKE_PTR(procs);
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

	if (u) {
		if (!streq(u->cgroup, cgroup)) {
			/* Moved: figures of another cgroup are not comparable. */
			hashmap_remove(&tf->units, key);
			unit_free(tf, u);
			u = NULL;
		} else
			return u;
	}
	u = calloc(1, sizeof(*u));
	if (!u)
		return NULL;
	u->key = strdup(key);
	u->cgroup = strdup(cgroup);
	u->est = (struct text_faults_estimate)TEXT_FAULTS_ESTIMATE_INIT;
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
