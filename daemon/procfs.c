/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "procfs.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

int procfs_field(const char *buf, size_t len, const char *key, char sep, const char **ret_value,
		 size_t *ret_len)
{
	const char *p = buf, *end = buf + len;
	size_t kl = strlen(key);

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *le = nl ?: end;

		if ((size_t)(le - p) > kl && memcmp(p, key, kl) == 0 && p[kl] == sep) {
			const char *v = p + kl + 1;

			while (v < le && is_blank(*v))
				v++;
			while (le > v && is_blank(le[-1]))
				le--;
			*ret_value = v;
			*ret_len = (size_t)(le - v);
			return 0;
		}
		p = le + 1;
	}
	return -ENOENT;
}

/* Decimal digits from s; *ret_end is where they stop. */
static int parse_digits(const char *s, const char *end, const char **ret_end, uint64_t *ret)
{
	uint64_t v = 0;
	const char *start = s;

	for (; s < end && *s >= '0' && *s <= '9'; s++) {
		if (v > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (s == start)
		return -EINVAL;
	*ret_end = s;
	*ret = v;
	return 0;
}

int procfs_parse_u64(const char *s, size_t n, uint64_t *ret)
{
	const char *e;
	uint64_t x;
	int r;

	r = parse_digits(s, s + n, &e, &x);
	if (r < 0)
		return r;
	if (e != s + n)
		return -EINVAL;
	*ret = x;
	return 0;
}

int procfs_parse_limit(const char *buf, size_t len, uint64_t *ret)
{
	while (len > 0 && (buf[len - 1] == '\n' || is_blank(buf[len - 1])))
		len--;
	if (len == 3 && memcmp(buf, "max", 3) == 0) {
		*ret = UINT64_MAX;
		return 0;
	}
	return procfs_parse_u64(buf, len, ret) < 0 ? -EINVAL : 0;
}

int procfs_field_u64(const char *buf, size_t len, const char *key, char sep, uint64_t *ret)
{
	const char *v;
	size_t n;
	int r;

	r = procfs_field(buf, len, key, sep, &v, &n);
	if (r < 0)
		return r;
	return procfs_parse_u64(v, n, ret);
}

int procfs_field_kb(const char *buf, size_t len, const char *key, uint64_t *ret_bytes)
{
	const char *v, *e;
	size_t n;
	uint64_t x;
	int r;

	r = procfs_field(buf, len, key, ':', &v, &n);
	if (r < 0)
		return r;
	r = parse_digits(v, v + n, &e, &x);
	if (r < 0)
		return r;
	while (e < v + n && is_blank(*e))
		e++;
	if (v + n - e != 2 || memcmp(e, "kB", 2) != 0)
		return -EINVAL;
	if (x > UINT64_MAX / 1024)
		return -ERANGE;
	*ret_bytes = x * 1024;
	return 0;
}

static int parse_hex(const char *s, size_t n, uint64_t *ret)
{
	uint64_t v = 0;

	if (n == 0 || n > 16)
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		unsigned d = c >= '0' && c <= '9' ? (unsigned)(c - '0') :
			     c >= 'a' && c <= 'f' ? (unsigned)(c - 'a' + 10) :
			     c >= 'A' && c <= 'F' ? (unsigned)(c - 'A' + 10) : 16;

		if (d > 15)
			return -EINVAL;
		v = v << 4 | d;
	}
	*ret = v;
	return 0;
}

int proc_status_parse(const char *buf, size_t len, struct proc_status *ret)
{
	struct proc_status s = { 0 };
	const char *v;
	size_t n;
	int r;

	r = procfs_field(buf, len, "State", ':', &v, &n);
	if (r < 0)
		return r;
	if (n == 0)
		return -EINVAL;
	s.state = v[0];
	r = procfs_field_u64(buf, len, "Threads", ':', &s.threads);
	if (r < 0 && r != -ENOENT)
		return r;
	r = procfs_field(buf, len, "CapEff", ':', &v, &n);
	if (r == 0) {
		r = parse_hex(v, n, &s.cap_eff);
		if (r < 0)
			return r;
		s.has_cap_eff = true;
	}
	*ret = s;
	return 0;
}

bool proc_status_exited(const struct proc_status *s)
{
	return (s->state == 'Z' || s->state == 'X') && s->threads <= 1;
}

int procfs_stat_tail(const char *buf, size_t len, char *out, size_t size)
{
	const char *close = NULL;
	size_t l;

	if (!size)
		return -EINVAL;
	for (size_t i = len; i > 0; i--)
		if (buf[i - 1] == ')') {
			close = buf + i - 1;
			break;
		}
	if (!close)
		return -EINVAL;
	l = (size_t)(buf + len - close - 1);
	if (l >= size)
		l = size - 1;
	memcpy(out, close + 1, l);
	out[l] = '\0';
	return 0;
}
