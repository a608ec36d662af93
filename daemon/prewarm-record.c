/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The record's text format, one item a line:
 *
 *   execguard-prewarm 1
 *   unit ESCAPED-KEY
 *   time SECONDS
 *   file MAJOR:MINOR INODE SIZE MTIME_SEC.NSEC ESCAPED-PATH
 *   range OFFSET LENGTH HEAT
 *   ...
 *   end FILES RANGES
 *
 * Text, so that an administrator can read it; strict, so that a record
 * from a crash, a disk error or another version is refused whole (the
 * daemon records anew) rather than half believed. Escaping: every byte
 * below 0x21, 0x7f and the backslash are written \xNN. */
#include <inttypes.h>
#include <stdio.h>

#include "prewarm-record.h"
#include "util.h"

void prewarm_file_done(struct prewarm_file *f)
{
	free(f->path);
	free(f->ranges);
	*f = (struct prewarm_file){ 0 };
}

void prewarm_record_done(struct prewarm_record *r)
{
	for (size_t i = 0; i < r->n_files; i++)
		prewarm_file_done(&r->files[i]);
	free(r->files);
	free(r->unit);
	*r = (struct prewarm_record){ 0 };
}

uint64_t prewarm_record_bytes(const struct prewarm_record *r)
{
	uint64_t b = 0;

	for (size_t i = 0; i < r->n_files; i++)
		for (size_t k = 0; k < r->files[i].n_ranges; k++)
			b += r->files[i].ranges[k].length;
	return b;
}

size_t prewarm_record_n_ranges(const struct prewarm_record *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_files; i++)
		n += r->files[i].n_ranges;
	return n;
}

static bool needs_escape(unsigned char c)
{
	return c <= 0x20 || c == 0x7f || c == '\\';
}

static void put_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (needs_escape(c))
			fprintf(f, "\\x%02x", c);
		else
			fputc(c, f);
	}
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* The escaped field [p, p + n) as a string; NULL and *bad on a stray
 * byte, a bad escape or an escaped NUL. */
static char *unescape(const char *p, size_t n, bool *bad)
{
	char *s = malloc(n + 1), *o = s;

	*bad = false;
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)p[i];

		if (c == '\\') {
			int h, l;

			if (i + 3 >= n)
				goto bad;
			if (p[i + 1] != 'x' || (h = hexval(p[i + 2])) < 0 || (l = hexval(p[i + 3])) < 0 ||
			    (h == 0 && l == 0))
				goto bad;
			*o++ = (char)(h * 16 + l);
			i += 3;
		} else if (needs_escape(c)) {
			goto bad;
		} else {
			*o++ = (char)c;
		}
	}
	*o = '\0';
	return s;
bad:
	free(s);
	*bad = true;
	return NULL;
}

/* A decimal number without sign or leading zeros, fully consumed up to
 * the next space or the end; advances *p past one following space. */
static int take_u64(const char **p, const char *end, char stop, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;

	if (s >= end || *s < '0' || *s > '9')
		return -EINVAL;
	if (*s == '0' && s + 1 < end && s[1] >= '0' && s[1] <= '9')
		return -EINVAL;
	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (stop) {
		if (s >= end || *s != stop)
			return -EINVAL;
		s++;
	} else if (s != end) {
		return -EINVAL;
	}
	*p = s;
	*ret = v;
	return 0;
}

/* Exactly nine digits and a space: the nanoseconds of a time. */
static int take_nsec(const char **p, const char *end, uint64_t *ret)
{
	const char *s = *p;
	uint64_t v = 0;

	if (end - s < 10 || s[9] != ' ')
		return -EINVAL;
	for (int i = 0; i < 9; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*p = s + 10;
	*ret = v;
	return 0;
}

struct parse {
	struct prewarm_record rec;
	size_t allocated_files, allocated_ranges, n_ranges;
	uint64_t prev_end; /* of the current file's last range */
	bool ended;
};

static int parse_file_line(struct parse *ps, const char *p, const char *end, const char **why)
{
	struct prewarm_file f = { 0 };
	uint64_t maj, min, ino, size, sec, nsec;
	bool bad;

	if (ps->rec.n_files > 0 && ps->rec.files[ps->rec.n_files - 1].n_ranges == 0) {
		*why = "a file without ranges";
		return -EINVAL;
	}
	if (ps->rec.n_files >= PREWARM_RECORD_MAX_FILES) {
		*why = "too many files";
		return -E2BIG;
	}
	if (take_u64(&p, end, ':', &maj) < 0 || take_u64(&p, end, ' ', &min) < 0 ||
	    take_u64(&p, end, ' ', &ino) < 0 || take_u64(&p, end, ' ', &size) < 0 ||
	    take_u64(&p, end, '.', &sec) < 0 || take_nsec(&p, end, &nsec) < 0 || maj > UINT32_MAX ||
	    min > UINT32_MAX || sec > INT64_MAX || nsec >= 1000000000 || size > INT64_MAX) {
		*why = "malformed file line";
		return -EINVAL;
	}
	f.path = unescape(p, (size_t)(end - p), &bad);
	if (!f.path) {
		*why = "malformed path";
		return bad ? -EINVAL : -ENOMEM;
	}
	if (f.path[0] != '/') {
		free(f.path);
		*why = "relative path";
		return -EINVAL;
	}
	f.dev_major = (uint32_t)maj;
	f.dev_minor = (uint32_t)min;
	f.inode = ino;
	f.size = size;
	f.mtime_sec = (int64_t)sec;
	f.mtime_nsec = (uint32_t)nsec;
	if (ps->rec.n_files == ps->allocated_files) {
		size_t n = ps->allocated_files ? ps->allocated_files * 2 : 8;
		struct prewarm_file *nf = realloc(ps->rec.files, n * sizeof(*nf));

		if (!nf) {
			free(f.path);
			return -ENOMEM;
		}
		ps->rec.files = nf;
		ps->allocated_files = n;
	}
	ps->rec.files[ps->rec.n_files++] = f;
	ps->allocated_ranges = 0;
	ps->prev_end = 0;
	return 0;
}

static int parse_range_line(struct parse *ps, const char *p, const char *end, const char **why)
{
	struct prewarm_file *f;
	uint64_t off, len, heat;

	if (ps->rec.n_files == 0) {
		*why = "range before any file";
		return -EINVAL;
	}
	if (ps->n_ranges >= PREWARM_RECORD_MAX_RANGES) {
		*why = "too many ranges";
		return -E2BIG;
	}
	f = &ps->rec.files[ps->rec.n_files - 1];
	if (take_u64(&p, end, ' ', &off) < 0 || take_u64(&p, end, ' ', &len) < 0 ||
	    take_u64(&p, end, 0, &heat) < 0 || len == 0 || heat == 0 || heat > UINT32_MAX) {
		*why = "malformed range line";
		return -EINVAL;
	}
	if (off > f->size || len > f->size - off) {
		*why = "range past the end of the file";
		return -EINVAL;
	}
	if (f->n_ranges > 0 && off < ps->prev_end) {
		*why = "ranges overlap or out of order";
		return -EINVAL;
	}
	if (f->n_ranges == ps->allocated_ranges) {
		size_t n = ps->allocated_ranges ? ps->allocated_ranges * 2 : 8;
		struct prewarm_range *nr = realloc(f->ranges, n * sizeof(*nr));

		if (!nr)
			return -ENOMEM;
		f->ranges = nr;
		ps->allocated_ranges = n;
	}
	f->ranges[f->n_ranges++] = (struct prewarm_range){ .offset = off, .length = len, .heat = (uint32_t)heat };
	ps->prev_end = off + len;
	ps->n_ranges++;
	return 0;
}

static bool starts(const char *p, const char *end, const char *word)
{
	size_t n = strlen(word);

	return (size_t)(end - p) >= n && memcmp(p, word, n) == 0;
}

static int parse_line(struct parse *ps, unsigned line, const char *p, const char *end, const char **why)
{
	uint64_t v, v2;
	bool bad;

	if (ps->ended) {
		*why = "data after the end line";
		return -EINVAL;
	}
	if (line == 1) {
		if ((size_t)(end - p) != strlen("execguard-prewarm 1") || !starts(p, end, "execguard-prewarm 1")) {
			*why = "not a prewarm record of version 1";
			return -EINVAL;
		}
		return 0;
	}
	if (line == 2) {
		if (!starts(p, end, "unit ") || end - p == 5) {
			*why = "no unit line";
			return -EINVAL;
		}
		p += 5;
		ps->rec.unit = unescape(p, (size_t)(end - p), &bad);
		if (!ps->rec.unit) {
			*why = "malformed unit";
			return bad ? -EINVAL : -ENOMEM;
		}
		return 0;
	}
	if (line == 3) {
		p += 5;
		if (!starts(p - 5, end, "time ") || take_u64(&p, end, 0, &v) < 0 || v > INT64_MAX) {
			*why = "no time line";
			return -EINVAL;
		}
		ps->rec.time = (int64_t)v;
		return 0;
	}
	if (starts(p, end, "file "))
		return parse_file_line(ps, p + 5, end, why);
	if (starts(p, end, "range "))
		return parse_range_line(ps, p + 6, end, why);
	if (starts(p, end, "end ")) {
		p += 4;
		if (ps->rec.n_files > 0 && ps->rec.files[ps->rec.n_files - 1].n_ranges == 0) {
			*why = "a file without ranges";
			return -EINVAL;
		}
		if (take_u64(&p, end, ' ', &v) < 0 || take_u64(&p, end, 0, &v2) < 0 || v != ps->rec.n_files ||
		    v2 != ps->n_ranges) {
			*why = "end line does not match the content";
			return -EINVAL;
		}
		ps->ended = true;
		return 0;
	}
	*why = "unknown line";
	return -EINVAL;
}

int prewarm_record_parse(const char *buf, size_t len, struct prewarm_record *ret, const char **ret_why,
			 unsigned *ret_line)
{
	struct parse ps = { 0 };
	const char *p = buf, *end = buf + len, *why = NULL;
	unsigned line = 0;
	int r = 0;

	if (len > PREWARM_RECORD_MAX_BYTES) {
		*ret_why = "larger than a record may be";
		*ret_line = 0;
		return -E2BIG;
	}
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));

		line++;
		if (!nl) {
			why = "truncated (no newline at the end)";
			r = -EINVAL;
			break;
		}
		r = parse_line(&ps, line, p, nl, &why);
		if (r < 0)
			break;
		p = nl + 1;
	}
	if (r >= 0 && !ps.ended) {
		why = line < 3 ? "too short" : "truncated (no end line)";
		r = -EINVAL;
		line++;
	}
	if (r < 0) {
		prewarm_record_done(&ps.rec);
		*ret_why = why ?: "out of memory";
		*ret_line = line;
		return r;
	}
	*ret = ps.rec;
	return 0;
}

static int file_valid(const struct prewarm_file *f)
{
	uint64_t prev_end = 0;

	if (!f->path || f->path[0] != '/' || f->mtime_nsec >= 1000000000 || f->mtime_sec < 0 ||
	    f->size > INT64_MAX)
		return -EINVAL;
	for (size_t k = 0; k < f->n_ranges; k++) {
		const struct prewarm_range *g = &f->ranges[k];

		if (g->length == 0 || g->heat == 0 || g->offset > f->size || g->length > f->size - g->offset ||
		    (k > 0 && g->offset < prev_end))
			return -EINVAL;
		prev_end = g->offset + g->length;
	}
	return 0;
}

/* The heat below which ranges are left out so that at most max_ranges
 * remain: the coldest go first. 0 when all fit. */
static uint32_t heat_cutoff(const struct prewarm_record *r, size_t max_ranges)
{
	uint32_t cut = 0;

	while (true) {
		size_t n = 0;
		uint32_t next = UINT32_MAX;

		for (size_t i = 0; i < r->n_files; i++)
			for (size_t k = 0; k < r->files[i].n_ranges; k++) {
				uint32_t h = r->files[i].ranges[k].heat;

				if (h > cut) {
					n++;
					if (h < next)
						next = h;
				}
			}
		if (n <= max_ranges || next == UINT32_MAX)
			return cut;
		cut = next; /* drop the coldest heat and count again */
	}
}

static int format_with(const struct prewarm_record *r, size_t max_ranges, char **ret_buf, size_t *ret_len)
{
	uint32_t cut = heat_cutoff(r, max_ranges);
	size_t n_files = 0, n_ranges = 0, len = 0;
	char *buf = NULL;
	FILE *f;

	f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	fprintf(f, "execguard-prewarm %d\nunit ", PREWARM_RECORD_VERSION);
	put_escaped(f, r->unit);
	fprintf(f, "\ntime %" PRIi64 "\n", r->time < 0 ? 0 : r->time);
	for (size_t i = 0; i < r->n_files && n_files < PREWARM_RECORD_MAX_FILES; i++) {
		const struct prewarm_file *pf = &r->files[i];
		size_t kept = 0;

		for (size_t k = 0; k < pf->n_ranges; k++)
			kept += pf->ranges[k].heat > cut;
		if (kept == 0)
			continue;
		fprintf(f, "file %" PRIu32 ":%" PRIu32 " %" PRIu64 " %" PRIu64 " %" PRIi64 ".%09" PRIu32 " ",
			pf->dev_major, pf->dev_minor, pf->inode, pf->size, pf->mtime_sec, pf->mtime_nsec);
		put_escaped(f, pf->path);
		fputc('\n', f);
		n_files++;
		for (size_t k = 0; k < pf->n_ranges; k++) {
			const struct prewarm_range *g = &pf->ranges[k];

			if (g->heat <= cut)
				continue;
			fprintf(f, "range %" PRIu64 " %" PRIu64 " %" PRIu32 "\n", g->offset, g->length, g->heat);
			n_ranges++;
		}
	}
	fprintf(f, "end %zu %zu\n", n_files, n_ranges);
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret_buf = buf;
	*ret_len = len;
	return 0;
}

int prewarm_record_format(const struct prewarm_record *r, char **ret_buf, size_t *ret_len)
{
	size_t max_ranges = PREWARM_RECORD_MAX_RANGES;

	if (!r->unit || !r->unit[0])
		return -EINVAL;
	for (size_t i = 0; i < r->n_files; i++)
		if (file_valid(&r->files[i]) < 0)
			return -EINVAL;
	/* Long paths can make even the allowed ranges too many bytes:
	 * halve the ranges kept until the text fits. */
	for (;;) {
		char *buf;
		size_t len;
		int ret = format_with(r, max_ranges, &buf, &len);

		if (ret < 0)
			return ret;
		if (len <= PREWARM_RECORD_MAX_BYTES) {
			*ret_buf = buf;
			*ret_len = len;
			return 0;
		}
		free(buf);
		if (max_ranges == 0)
			return -E2BIG; /* the header alone: a unit name that long */
		max_ranges /= 2;
	}
}

int prewarm_ranges_from_heat(const uint8_t *heat, size_t n_pages, uint64_t page_size, uint64_t file_size,
			     size_t gap_pages, struct prewarm_range **ranges, size_t *n_ranges)
{
	size_t i = 0, allocated = *n_ranges;

	while (i < n_pages) {
		size_t start, last, cold = 0;
		uint8_t hot = 0;

		while (i < n_pages && !heat[i])
			i++;
		if (i == n_pages)
			break;
		start = last = i;
		for (; i < n_pages; i++) {
			if (heat[i]) {
				last = i;
				cold = 0;
				if (heat[i] > hot)
					hot = heat[i];
			} else if (++cold > gap_pages) {
				break;
			}
		}
		{
			uint64_t off = (uint64_t)start * page_size, end = (uint64_t)(last + 1) * page_size;
			struct prewarm_range *nr;

			if (off >= file_size)
				break;
			if (end > file_size)
				end = file_size;
			if (*n_ranges == allocated) {
				allocated = allocated ? allocated * 2 : 16;
				nr = realloc(*ranges, allocated * sizeof(*nr));
				if (!nr)
					return -ENOMEM;
				*ranges = nr;
			}
			(*ranges)[(*n_ranges)++] =
				(struct prewarm_range){ .offset = off, .length = end - off, .heat = hot };
		}
		i = last + 1;
	}
	return 0;
}

static const struct prewarm_record *plan_record;

static int step_cmp(const void *a, const void *b)
{
	const struct prewarm_step *x = a, *y = b;
	uint32_t hx = plan_record->files[x->file].ranges[x->range].heat;
	uint32_t hy = plan_record->files[y->file].ranges[y->range].heat;

	if (hx != hy)
		return hx > hy ? -1 : 1;
	if (x->file != y->file)
		return x->file < y->file ? -1 : 1;
	return x->range < y->range ? -1 : x->range > y->range;
}

int prewarm_plan(const struct prewarm_record *r, uint64_t budget, struct prewarm_step **ret, size_t *ret_n,
		 uint64_t *ret_bytes)
{
	size_t n = prewarm_record_n_ranges(r), k = 0, kept = 0;
	struct prewarm_step *steps;
	uint64_t bytes = 0;

	steps = calloc(n ? n : 1, sizeof(*steps));
	if (!steps)
		return -ENOMEM;
	for (size_t i = 0; i < r->n_files; i++)
		for (size_t j = 0; j < r->files[i].n_ranges; j++)
			steps[k++] = (struct prewarm_step){ .file = i, .range = j };
	/* qsort has no context argument in C11; the daemon is one thread. */
	plan_record = r;
	qsort(steps, n, sizeof(*steps), step_cmp);
	plan_record = NULL;
	for (size_t i = 0; i < n; i++) {
		uint64_t l = r->files[steps[i].file].ranges[steps[i].range].length;

		if (l > budget - bytes)
			continue;
		bytes += l;
		steps[kept++] = steps[i];
	}
	*ret = steps;
	*ret_n = kept;
	*ret_bytes = bytes;
	return 0;
}

int prewarm_record_filename(const char *key, char *buf, size_t size)
{
	static const char suffix[] = ".prewarm";
	size_t o = 0;

	if (!key || !key[0])
		return -EINVAL;
	for (const char *s = key; *s; s++) {
		unsigned char c = (unsigned char)*s;
		bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '_' || c == ':' || c == '@' || c == '-' || (c == '.' && s != key);

		if (o + (keep ? 1 : 3) >= size || o + (keep ? 1 : 3) > 255 - (sizeof(suffix) - 1))
			return -ENAMETOOLONG;
		if (keep)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "%%%02X", c);
	}
	if (o + sizeof(suffix) > size)
		return -ENAMETOOLONG;
	memcpy(buf + o, suffix, sizeof(suffix));
	return 0;
}
