/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>

#include "maps.h"
#include "util.h"

/* Debian 12's uapi headers predate PROCMAP_QUERY (6.11); the ABI is fixed. */
#ifndef PROCMAP_QUERY
struct procmap_query {
	uint64_t size;
	uint64_t query_flags;
	uint64_t query_addr;
	uint64_t vma_start;
	uint64_t vma_end;
	uint64_t vma_flags;
	uint64_t vma_page_size;
	uint64_t vma_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	uint32_t vma_name_size;
	uint32_t build_id_size;
	uint64_t vma_name_addr;
	uint64_t build_id_addr;
};
#define PROCMAP_QUERY _IOWR('f', 17, struct procmap_query)
#define PROCMAP_QUERY_VMA_READABLE 0x01
#define PROCMAP_QUERY_VMA_WRITABLE 0x02
#define PROCMAP_QUERY_VMA_EXECUTABLE 0x04
#define PROCMAP_QUERY_VMA_SHARED 0x08
#define PROCMAP_QUERY_COVERING_OR_NEXT_VMA 0x10
#endif

#define DELETED_SUFFIX " (deleted)"
#define MEMFD_PREFIX "/memfd:"

const char *mapping_kind_to_string(enum mapping_kind k)
{
	switch (k) {
	case MAPPING_FILE:
		return "file";
	case MAPPING_DELETED:
		return "deleted";
	case MAPPING_MEMFD:
		return "memfd";
	case MAPPING_ANON:
		return "anonymous";
	case MAPPING_SPECIAL:
		return "special";
	}
	return "unknown";
}

static int parse_hex(const char **p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *s = *p;

	if (s >= end)
		return -EINVAL;
	for (; s < end; s++) {
		unsigned d;

		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (v >> 60)
			return -ERANGE;
		v = v * 16 + d;
	}
	if (s == *p)
		return -EINVAL;
	*p = s;
	*ret = v;
	return 0;
}

static int parse_dec(const char **p, const char *end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *s = *p;

	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (s == *p)
		return -EINVAL;
	*p = s;
	*ret = v;
	return 0;
}

static int expect_char(const char **p, const char *end, char c)
{
	if (*p >= end || **p != c)
		return -EINVAL;
	(*p)++;
	return 0;
}

static void skip_spaces(const char **p, const char *end)
{
	while (*p < end && **p == ' ')
		(*p)++;
}

/* The kernel escapes only '\n' in map paths, as the octal "\012";
 * PROCMAP_QUERY names come raw and are copied verbatim. */
static char *copy_path(const char *s, size_t len, bool escaped)
{
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (escaped && s[i] == '\\' && len - i >= 4 &&
		    s[i + 1] == '0' && s[i + 2] == '1' && s[i + 3] == '2') {
			*o++ = '\n';
			i += 3;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

static bool has_suffix(const char *s, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix);

	return len >= sl && memcmp(s + len - sl, suffix, sl) == 0;
}

/* Classify a mapping from its name and inode and store the path. */
static int classify(const char *name, size_t len, bool escaped, uint64_t inode,
		    struct exec_mapping *m)
{
	bool deleted = false;

	m->path = NULL;
	if (len == 0) {
		m->kind = inode ? MAPPING_FILE : MAPPING_ANON;
		return 0;
	}
	if (name[0] != '/') {
		/* "[vdso]", "[anon:name]" and friends: not a file. */
		m->kind = inode ? MAPPING_FILE : MAPPING_SPECIAL;
		m->path = copy_path(name, len, escaped);
		return m->path ? 0 : -ENOMEM;
	}
	if (has_suffix(name, len, DELETED_SUFFIX)) {
		deleted = true;
		len -= strlen(DELETED_SUFFIX);
	}
	m->path = copy_path(name, len, escaped);
	if (!m->path)
		return -ENOMEM;
	if (strncmp(m->path, MEMFD_PREFIX, strlen(MEMFD_PREFIX)) == 0)
		m->kind = MAPPING_MEMFD;
	else
		m->kind = deleted ? MAPPING_DELETED : MAPPING_FILE;
	return 0;
}

/* The fields before the name: "start-end perms offset major:minor inode". */
struct maps_head {
	uint64_t start, end, offset, major, minor, inode;
	char perms[4];
};

static int parse_head(const char **p, const char *end, struct maps_head *h)
{
	if (parse_hex(p, end, &h->start) < 0 || expect_char(p, end, '-') < 0 ||
	    parse_hex(p, end, &h->end) < 0 || expect_char(p, end, ' ') < 0)
		return -EINVAL;
	if (end - *p < 5)
		return -EINVAL;
	memcpy(h->perms, *p, 4);
	*p += 4;
	if (expect_char(p, end, ' ') < 0 || parse_hex(p, end, &h->offset) < 0 ||
	    expect_char(p, end, ' ') < 0 || parse_hex(p, end, &h->major) < 0 ||
	    expect_char(p, end, ':') < 0 || parse_hex(p, end, &h->minor) < 0 ||
	    expect_char(p, end, ' ') < 0 || parse_dec(p, end, &h->inode) < 0)
		return -EINVAL;
	if (h->end < h->start || h->major > UINT32_MAX || h->minor > UINT32_MAX)
		return -EINVAL;
	if ((h->perms[0] != 'r' && h->perms[0] != '-') || (h->perms[1] != 'w' && h->perms[1] != '-') ||
	    (h->perms[2] != 'x' && h->perms[2] != '-') || (h->perms[3] != 'p' && h->perms[3] != 's'))
		return -EINVAL;
	return 0;
}

static unsigned prot_of(const char perms[4])
{
	return (perms[0] == 'r' ? MAP_PROT_R : 0) | (perms[1] == 'w' ? MAP_PROT_W : 0) |
	       (perms[2] == 'x' ? MAP_PROT_X : 0) | (perms[3] == 's' ? MAP_PROT_SHARED : 0);
}

const char *map_prot_string(unsigned prot, char buf[static 5])
{
	buf[0] = prot & MAP_PROT_R ? 'r' : '-';
	buf[1] = prot & MAP_PROT_W ? 'w' : '-';
	buf[2] = prot & MAP_PROT_X ? 'x' : '-';
	buf[3] = prot & MAP_PROT_SHARED ? 's' : 'p';
	buf[4] = '\0';
	return buf;
}

static int parse_line(const char *line, size_t len, bool exec_only, struct exec_mapping *ret)
{
	const char *p = line, *end = line + len;
	struct maps_head h;
	int r;

	if (len > 0 && line[len - 1] == '\n')
		end--;
	if (parse_head(&p, end, &h) < 0)
		return -EINVAL;
	if (exec_only && h.perms[2] != 'x')
		return 0;
	if (p < end && *p != ' ')
		return -EINVAL;
	skip_spaces(&p, end);

	*ret = (struct exec_mapping){
		.start = h.start,
		.end = h.end,
		.offset = h.offset,
		.inode = h.inode,
		.dev_major = (uint32_t)h.major,
		.dev_minor = (uint32_t)h.minor,
		.prot = prot_of(h.perms),
	};
	r = classify(p, (size_t)(end - p), true, h.inode, ret);
	return r < 0 ? r : 1;
}

int maps_parse_line(const char *line, size_t len, struct exec_mapping *ret)
{
	return parse_line(line, len, true, ret);
}

int maps_parse_line_any(const char *line, size_t len, struct exec_mapping *ret)
{
	return parse_line(line, len, false, ret);
}

int maps_find_identity(const char *buf, size_t len, uint64_t addr, struct file_identity *ret)
{
	const char *p = buf, *end = buf + len;

	while (p < end) {
		const char *eol = memchr(p, '\n', (size_t)(end - p));
		const char *q = p;
		struct maps_head h;

		if (!eol)
			eol = end;
		if (parse_head(&q, eol, &h) < 0)
			return -EINVAL;
		if (h.start <= addr && addr < h.end) {
			*ret = (struct file_identity){
				.dev_major = (uint32_t)h.major,
				.dev_minor = (uint32_t)h.minor,
				.inode = h.inode,
			};
			return 0;
		}
		p = eol + 1;
	}
	return -ENOENT;
}

int maps_identity_at(uint64_t addr, struct file_identity *ret)
{
	_cleanup_close_ int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	struct procmap_query q = { .size = sizeof(q), .query_addr = addr };
	size_t len;
	int r;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, PROCMAP_QUERY, &q) == 0) {
		*ret = (struct file_identity){
			.dev_major = q.dev_major,
			.dev_minor = q.dev_minor,
			.inode = q.inode,
		};
		return 0;
	}
	if (errno != ENOTTY && errno != EINVAL)
		return -errno;
	/* Before 6.11: the text. */
	r = read_file_at(AT_FDCWD, "/proc/self/maps", 64 << 20, &buf, &len);
	if (r < 0)
		return r;
	return maps_find_identity(buf, len, addr, ret);
}

int exec_mappings_append(struct exec_mappings *m, const struct exec_mapping *item)
{
	if (m->n == m->allocated) {
		size_t na = m->allocated ? m->allocated * 2 : 16;
		struct exec_mapping *ni = realloc(m->items, na * sizeof(*ni));

		if (!ni)
			return -ENOMEM;
		m->items = ni;
		m->allocated = na;
	}
	m->items[m->n++] = *item;
	return 0;
}

void exec_mappings_clear(struct exec_mappings *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->items[i].path);
	m->n = 0;
}

/* Whether sel takes m before image selection: executable ones, and for
 * the wider selections the mappings of files. */
static bool wanted(const struct exec_mapping *m, enum maps_select sel)
{
	bool file = m->inode != 0 && m->path && m->path[0] == '/';

	switch (sel) {
	case MAPS_EXEC:
		return m->prot & MAP_PROT_X;
	case MAPS_IMAGES:
		return (m->prot & MAP_PROT_X) || file;
	case MAPS_FILES:
		return file;
	}
	return false;
}

static bool is_file(const struct exec_mapping *m)
{
	return m->kind == MAPPING_FILE || m->kind == MAPPING_DELETED;
}

int maps_parse_buffer_select(const char *buf, size_t len, enum maps_select sel, struct exec_mappings *out)
{
	const char *p = buf, *end = buf + len;
	size_t first = out->n;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct exec_mapping m;
		int r;

		if (l > 0) {
			r = parse_line(p, l, sel == MAPS_EXEC, &m);
			if (r < 0)
				return r;
			if (r > 0 && !wanted(&m, sel)) {
				free(m.path);
				r = 0;
			}
			if (r > 0) {
				r = exec_mappings_append(out, &m);
				if (r < 0) {
					free(m.path);
					return r;
				}
			}
		}
		p += l + 1;
	}
	if (sel == MAPS_IMAGES && out->n > first) {
		/* Only what this call appended. */
		struct exec_mappings tail = { out->items + first, out->n - first, out->n - first };

		exec_mappings_select_images(&tail);
		out->n = first + tail.n;
	}
	return 0;
}

int maps_parse_buffer(const char *buf, size_t len, struct exec_mappings *out)
{
	return maps_parse_buffer_select(buf, len, MAPS_EXEC, out);
}

struct file_key {
	uint64_t inode;
	uint32_t major, minor;
};

static int cmp_file_key(const void *a, const void *b)
{
	const struct file_key *x = a, *y = b;

	if (x->inode != y->inode)
		return x->inode < y->inode ? -1 : 1;
	if (x->major != y->major)
		return x->major < y->major ? -1 : 1;
	return (x->minor > y->minor) - (x->minor < y->minor);
}

void exec_mappings_select_images(struct exec_mappings *m)
{
	_cleanup_free_ struct file_key *keys = NULL;
	size_t n_keys = 0, k = 0;

	for (size_t i = 0; i < m->n; i++)
		n_keys += (m->items[i].prot & MAP_PROT_X) && is_file(&m->items[i]);
	keys = calloc(n_keys ? n_keys : 1, sizeof(*keys));
	if (!keys) {
		/* Out of memory: the executable mappings, as before images. */
		n_keys = 0;
	} else {
		n_keys = 0;
		for (size_t i = 0; i < m->n; i++)
			if ((m->items[i].prot & MAP_PROT_X) && is_file(&m->items[i]))
				keys[n_keys++] = (struct file_key){ m->items[i].inode, m->items[i].dev_major,
								    m->items[i].dev_minor };
		qsort(keys, n_keys, sizeof(*keys), cmp_file_key);
	}
	for (size_t i = 0; i < m->n; i++) {
		struct exec_mapping *e = &m->items[i];
		struct file_key key = { e->inode, e->dev_major, e->dev_minor };
		bool keep = (e->prot & MAP_PROT_X) ||
			    (is_file(e) && n_keys && bsearch(&key, keys, n_keys, sizeof(*keys), cmp_file_key));

		if (keep)
			m->items[k++] = *e;
		else
			free(e->path);
	}
	m->n = k;
}

uint64_t exec_mappings_file_bytes(const struct exec_mappings *m)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < m->n; i++)
		if (is_file(&m->items[i]) && (m->items[i].prot & MAP_PROT_X))
			sum += m->items[i].end - m->items[i].start;
	return sum;
}

/* PATH_MAX plus room for " (deleted)". */
#define QUERY_NAME_MAX 4200

static unsigned prot_of_query(uint64_t flags)
{
	return (flags & PROCMAP_QUERY_VMA_READABLE ? MAP_PROT_R : 0) |
	       (flags & PROCMAP_QUERY_VMA_WRITABLE ? MAP_PROT_W : 0) |
	       (flags & PROCMAP_QUERY_VMA_EXECUTABLE ? MAP_PROT_X : 0) |
	       (flags & PROCMAP_QUERY_VMA_SHARED ? MAP_PROT_SHARED : 0);
}

/* Every executable VMA, appended in address order. */
static int maps_read_query(int maps_fd, struct exec_mappings *out)
{
	/* Zeroed: tools that do not know this ioctl (valgrind) cannot see
	 * the kernel write the name. */
	_cleanup_free_ char *name = calloc(1, QUERY_NAME_MAX);
	uint64_t addr = 0;

	if (!name)
		return -ENOMEM;
	for (;;) {
		struct procmap_query q = {
			.size = sizeof(q),
			.query_flags = PROCMAP_QUERY_COVERING_OR_NEXT_VMA | PROCMAP_QUERY_VMA_EXECUTABLE,
			.query_addr = addr,
			.vma_name_size = QUERY_NAME_MAX,
			.vma_name_addr = (uint64_t)(uintptr_t)name,
		};
		struct exec_mapping m;
		size_t nlen;
		int r;

		if (ioctl(maps_fd, PROCMAP_QUERY, &q) < 0) {
			if (errno == ENOENT)
				return 0; /* no further VMA */
			return -errno;
		}
		if (q.vma_end <= addr)
			return -EIO;
		addr = q.vma_end;
		nlen = q.vma_name_size ? q.vma_name_size - 1 : 0;
		m = (struct exec_mapping){
			.start = q.vma_start,
			.end = q.vma_end,
			.offset = q.vma_offset,
			.inode = q.inode,
			.dev_major = q.dev_major,
			.dev_minor = q.dev_minor,
			.prot = prot_of_query(q.vma_flags),
		};
		r = classify(name, nlen, false, q.inode, &m);
		if (r < 0)
			return r;
		r = exec_mappings_append(out, &m);
		if (r < 0) {
			free(m.path);
			return r;
		}
	}
}

int maps_read(int proc_pid_fd, bool *use_query, struct exec_mappings *out)
{
	return maps_read_select(proc_pid_fd, use_query, MAPS_EXEC, out);
}

int maps_read_select(int proc_pid_fd, bool *use_query, enum maps_select sel, struct exec_mappings *out)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	size_t len;
	int r;

	/* The ioctl for the executable mappings only: it returns just those,
	 * one call each, where the text has every mapping. Whole images are a
	 * call per file mapping, and the text is cheaper then: 27 against 70
	 * us of CPU per read for bash, 102 against 284 for python3 -m
	 * http.server; even with 3,000 anonymous mappings beside, 683 against
	 * 633 (bench/mapscost.sh, host kernel 6.18, docs/whole-image.md). */
	if (sel == MAPS_EXEC && (!use_query || *use_query)) {
		fd = openat(proc_pid_fd, "maps", O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		r = maps_read_query(fd, out);
		if (r != -ENOTTY && r != -EINVAL)
			return r;
		/* Kernel without PROCMAP_QUERY: use the text from now on. */
		exec_mappings_clear(out);
		if (use_query)
			*use_query = false;
	}
	r = read_file_at(proc_pid_fd, "maps", 64 << 20, &buf, &len);
	if (r < 0)
		return r;
	return maps_parse_buffer_select(buf, len, sel, out);
}
