/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "residency.h"
#include "segments.h"
#include "util.h"

void seg_files_done(struct seg_files *f)
{
	for (size_t i = 0; i < f->n; i++) {
		free(f->items[i].path);
		free(f->items[i].where.path);
	}
	free(f->items);
	free(f->seen);
	*f = (struct seg_files){ 0 };
}

static struct seg_file *find(struct seg_files *f, uint32_t major, uint32_t minor, uint64_t inode, size_t *ret_i)
{
	for (size_t i = 0; i < f->n; i++)
		if (f->items[i].inode == inode && f->items[i].dev_major == major && f->items[i].dev_minor == minor) {
			*ret_i = i;
			return &f->items[i];
		}
	return NULL;
}

static struct seg_file *append(struct seg_files *f, size_t *ret_i)
{
	if (f->n == f->allocated) {
		size_t na = f->allocated ? f->allocated * 2 : 32;
		struct seg_file *ni = realloc(f->items, na * sizeof(*ni));
		unsigned *ns;

		if (!ni)
			return NULL;
		f->items = ni;
		ns = realloc(f->seen, na * sizeof(*ns));
		if (!ns)
			return NULL;
		f->seen = ns;
		f->allocated = na;
	}
	f->items[f->n] = (struct seg_file){ .elf = -ENOEXEC };
	f->seen[f->n] = 0;
	*ret_i = f->n;
	return &f->items[f->n++];
}

int seg_files_add_process(struct seg_files *f, pid_t pid, const struct exec_mappings *m)
{
	f->generation++;
	for (size_t i = 0; i < m->n; i++) {
		const struct exec_mapping *e = &m->items[i];
		struct seg_file *s;
		size_t k;

		if (!e->inode || !e->path || e->path[0] != '/')
			continue;
		s = find(f, e->dev_major, e->dev_minor, e->inode, &k);
		if (!s) {
			s = append(f, &k);
			if (!s)
				return -ENOMEM;
			s->path = strdup(e->path);
			s->where = *e;
			s->where.path = strdup(e->path);
			if (!s->path || !s->where.path) {
				free(s->path);
				free(s->where.path);
				f->n--;
				return -ENOMEM;
			}
			s->dev_major = e->dev_major;
			s->dev_minor = e->dev_minor;
			s->inode = e->inode;
			s->where_pid = pid;
		} else if (s->where_pid == 0) {
			/* Named first: now it can be reached through a mapping. */
			char *p = strdup(e->path);

			if (!p)
				return -ENOMEM;
			free(s->where.path);
			s->where = *e;
			s->where.path = p;
			s->where_pid = pid;
		}
		s->prot |= e->prot;
		if (e->prot & MAP_PROT_X)
			s->executable = true;
		if (f->seen[k] != f->generation) {
			f->seen[k] = f->generation;
			s->n_pids++;
		}
	}
	return 0;
}

/* The identity maps shows for fd (on overlayfs not what fstat() says):
 * map a page and ask. An empty file cannot be mapped: fstat() then. */
static int identity_of(int fd, struct file_identity *ret)
{
	long page = sysconf(_SC_PAGESIZE);
	struct stat st;
	void *p;
	int r;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EBADF;
	if (st.st_size > 0) {
		p = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
		if (p != MAP_FAILED) {
			r = maps_identity_at((uint64_t)(uintptr_t)p, ret);
			munmap(p, (size_t)page);
			if (r >= 0)
				return 0;
		}
	}
	*ret = (struct file_identity){ major(st.st_dev), minor(st.st_dev), (uint64_t)st.st_ino };
	return 0;
}

int seg_files_add_path(struct seg_files *f, const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct file_identity id;
	struct seg_file *s;
	size_t k;
	int r;

	if (fd < 0)
		return -errno;
	r = identity_of(fd, &id);
	if (r < 0)
		return r;
	s = find(f, id.dev_major, id.dev_minor, id.inode, &k);
	if (!s) {
		s = append(f, &k);
		if (!s)
			return -ENOMEM;
		s->path = strdup(path);
		if (!s->path) {
			f->n--;
			return -ENOMEM;
		}
		s->dev_major = id.dev_major;
		s->dev_minor = id.dev_minor;
		s->inode = id.inode;
	}
	s->named = true;
	return 0;
}

static int cmp_file(const void *a, const void *b)
{
	const struct seg_file *x = a, *y = b;
	bool ix = x->executable || x->named, iy = y->executable || y->named;

	if (ix != iy)
		return ix ? -1 : 1;
	return strcmp(x->path, y->path);
}

void seg_files_sort(struct seg_files *f)
{
	if (f->n)
		qsort(f->items, f->n, sizeof(*f->items), cmp_file);
	/* seen[] follows no order after this: a new generation starts. */
	f->generation++;
	if (f->seen)
		memset(f->seen, 0, f->allocated * sizeof(*f->seen));
}

void seg_file_count(struct seg_file *f, const struct elf_image *img, int elf, const unsigned char *vec,
		    uint64_t file_size, size_t page_size)
{
	uint64_t pages = file_size / page_size + (file_size % page_size != 0);

	f->file_size = file_size;
	f->size = pages * page_size;
	f->resident = 0;
	for (uint64_t i = 0; i < pages; i++)
		f->resident += (vec[i] & 1) ? page_size : 0;
	f->elf = elf;
	f->n_segments = 0;
	if (elf != 0)
		return;
	for (size_t i = 0; i < img->n_segments; i++) {
		struct seg_segment *s = &f->segments[f->n_segments++];
		uint64_t first, count, res = 0;

		elf_segment_pages(&img->segments[i], file_size, page_size, &first, &count);
		for (uint64_t p = first; p < first + count; p++)
			res += vec[p] & 1;
		*s = (struct seg_segment){
			.flags = img->segments[i].flags,
			.relro = img->segments[i].relro,
			.offset = first * page_size,
			.size = count * page_size,
			.resident = res * page_size,
		};
	}
	f->measured = true;
}

static int open_file(struct seg_file *f, int proc_fd, const char **ret_why)
{
	_cleanup_close_ int pfd = -1;
	struct file_identity id;
	int fd, r;

	if (f->where_pid > 0) {
		char name[32];

		snprintf(name, sizeof(name), "%d", (int)f->where_pid);
		pfd = openat(proc_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		/* Gone: residency_open() still tries the path. */
		return residency_open(pfd, &f->where, ret_why);
	}
	fd = open(f->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		*ret_why = "cannot open the path";
		return -errno;
	}
	r = identity_of(fd, &id);
	if (r < 0 || id.inode != f->inode || id.dev_major != f->dev_major || id.dev_minor != f->dev_minor) {
		close(fd);
		*ret_why = "the path names another file now";
		return r < 0 ? r : -ESTALE;
	}
	return fd;
}

void seg_file_measure(struct seg_file *f, int proc_fd)
{
	long ps = sysconf(_SC_PAGESIZE);
	size_t page_size = ps > 0 ? (size_t)ps : 4096;
	_cleanup_free_ unsigned char *vec = NULL;
	_cleanup_close_ int fd = -1;
	struct elf_image img = { 0 };
	const char *why = NULL;
	struct stat st;
	uint64_t pages;
	int elf;
	void *p;

	f->measured = false;
	f->error = 0;
	f->error_what = NULL;
	fd = open_file(f, proc_fd, &why);
	if (fd < 0) {
		f->error = fd;
		f->error_what = why ? why : "cannot open";
		return;
	}
	if (fstat(fd, &st) < 0) {
		f->error = -errno;
		f->error_what = "fstat() failed";
		return;
	}
	pages = ((uint64_t)st.st_size + page_size - 1) / page_size;
	vec = calloc(pages ? pages : 1, 1);
	if (!vec) {
		f->error = -ENOMEM;
		f->error_what = "out of memory";
		return;
	}
	if (pages) {
		/* Residency first: reading the headers may fault pages in. */
		p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED) {
			f->error = -errno;
			f->error_what = "mmap() failed";
			return;
		}
		if (mincore(p, (size_t)st.st_size, vec) < 0) {
			f->error = -errno;
			f->error_what = "mincore() failed";
			munmap(p, (size_t)st.st_size);
			return;
		}
		munmap(p, (size_t)st.st_size);
	}
	elf = elf_read(fd, &img);
	seg_file_count(f, &img, elf, vec, (uint64_t)st.st_size, page_size);
	f->measured = true;
}

/* cgroup.procs of dirfd, then each child directory, depth first. */
static int cgroup_walk(int dirfd, unsigned depth, pid_t **pids, size_t *n, size_t *allocated)
{
	_cleanup_free_ char *buf = NULL;
	struct dirent *de;
	DIR *d;
	int r;

	if (depth > 64)
		return -ELOOP;
	r = read_file_at(dirfd, "cgroup.procs", 16 << 20, &buf, NULL);
	if (r < 0)
		return r;
	for (char *l = buf, *nl; l && *l; l = nl) {
		char *end;
		long v;

		nl = strchr(l, '\n');
		if (nl)
			*nl++ = '\0';
		v = strtol(l, &end, 10);
		if (*end || v <= 0)
			return -EBADMSG;
		if (*n == *allocated) {
			size_t na = *allocated ? *allocated * 2 : 64;
			pid_t *np = realloc(*pids, na * sizeof(*np));

			if (!np)
				return -ENOMEM;
			*pids = np;
			*allocated = na;
		}
		(*pids)[(*n)++] = (pid_t)v;
	}
	r = opendir_at(dirfd, &d);
	if (r < 0)
		return r;
	while ((de = readdir(d))) {
		_cleanup_close_ int sub = -1;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (sub < 0)
			continue; /* removed meanwhile */
		r = cgroup_walk(sub, depth + 1, pids, n, allocated);
		if (r < 0 && r != -ENOENT && r != -ENODEV) {
			closedir(d);
			return r;
		}
	}
	closedir(d);
	return 0;
}

int seg_cgroup_pids(int cgroup_fd, pid_t **pids, size_t *n)
{
	size_t allocated = *n;

	return cgroup_walk(cgroup_fd, 0, pids, n, &allocated);
}

void seg_files_totals(const struct seg_files *f, struct seg_totals *ret)
{
	struct seg_totals t = { 0 };

	for (size_t i = 0; i < f->n; i++) {
		const struct seg_file *s = &f->items[i];

		if (!s->measured) {
			t.n_errors++;
			continue;
		}
		if (!(s->executable || s->named) || s->elf != 0) {
			t.n_data++;
			continue;
		}
		t.n_images++;
		for (size_t k = 0; k < s->n_segments; k++) {
			t.size[s->segments[k].flags & 7] += s->segments[k].size;
			t.resident[s->segments[k].flags & 7] += s->segments[k].resident;
		}
	}
	*ret = t;
}
