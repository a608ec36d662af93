/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A unit's own [X-ExecGuard] section: finding it in the unit's files,
 * merging them in systemd's order, reading them with the policy files'
 * checks. No bus, no daemon: execguardctl check-config uses it too. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ini-lines.h"
#include "unit-files.h"
#include "util.h"

#define UNIT_FILE_MAX (1 << 20)

/* Whether buf has an [X-ExecGuard] section; the line of its last
 * Protect= (0: none). */
static bool scan_section(const char *buf, size_t len, unsigned *ret_protect_line)
{
	struct ini_cursor c = { .pos = buf + ini_bom_len(buf, len), .end = buf + len };
	struct ini_line l;
	bool in = false, found = false;

	*ret_protect_line = 0;
	while (ini_next_line(&c, &l)) {
		if (l.kind == INI_SECTION) {
			in = ini_line_is_section(&l, "X-ExecGuard");
			found |= in;
		} else if (in && ini_line_is_key(&l, "Protect")) {
			*ret_protect_line = l.number;
		}
	}
	return found;
}

unsigned unit_file_protect_line(const char *buf, size_t len)
{
	unsigned line;

	scan_section(buf, len, &line);
	return line;
}

bool unit_file_has_section(const char *buf, size_t len)
{
	unsigned line;

	return scan_section(buf, len, &line);
}

const char **unit_files_order(const char *fragment, char *const *dropins)
{
	size_t n = 0, k = 0;
	const char **v;

	for (char *const *d = dropins; d && *d; d++)
		n++;
	v = calloc(n + 2, sizeof(char *));
	if (!v)
		return NULL;
	if (fragment && *fragment && !streq(fragment, "/dev/null"))
		v[k++] = fragment;
	for (char *const *d = dropins; d && *d; d++)
		/* A drop-in linked to /dev/null masks nothing of ours. */
		if (**d && !streq(*d, "/dev/null"))
			v[k++] = *d;
	return v;
}

int unit_files_merge(const struct unit_file *files, size_t n, struct policy *errors_to,
		     struct rule_settings *ret, char **ret_source)
{
	struct rule_settings merged = { .protect = -1 };
	_cleanup_free_ char *source = NULL;
	const char *last = NULL;
	bool found = false;

	for (size_t i = 0; i < n; i++) {
		struct rule_settings s = { .protect = -1 };
		unsigned line;
		int r;

		if (!scan_section(files[i].buf, files[i].len, &line))
			continue;
		r = policy_parse_unit_buffer(&s, errors_to, files[i].path, files[i].buf, files[i].len);
		if (r < 0)
			return r;
		if (r > 0)
			continue; /* reported; the file counts for nothing */
		found = true;
		last = files[i].path;
		if (s.protect >= 0) {
			free(source);
			source = NULL;
			if (asprintf(&source, "%s:%u", files[i].path, line) < 0)
				return -ENOMEM;
			merged.protect = s.protect;
		}
		if (s.lock_budget.set)
			merged.lock_budget = s.lock_budget;
		if (s.exec_protect_limit)
			merged.exec_protect_limit = s.exec_protect_limit;
		if (s.prewarm)
			merged.prewarm = s.prewarm;
		if (s.prewarm_budget.set)
			merged.prewarm_budget = s.prewarm_budget;
	}
	if (!found)
		return 0;
	if (!source && !(source = strdup(last)))
		return -ENOMEM;
	*ret = merged;
	*ret_source = TAKE_PTR(source);
	return 1;
}

static int read_unit_file(const char *path, struct policy *errors_to, char **ret_buf, size_t *ret_len)
{
	_cleanup_close_ int fd = -1;
	const char *why;
	int r;

	/* Unit files are often symlinks (systemctl link, packaging): follow
	 * them, and judge the file they lead to. */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0; /* removed since systemd loaded it */
		return policy_add_error(errors_to, path, 0, "cannot open: %s", STRERROR(errno)) ?: -errno;
	}
	r = policy_check_file_mode(fd, &why);
	if (r == -EPERM)
		return policy_add_error(errors_to, path, 0, "refused: %s", why) ?: r;
	if (r < 0)
		return r;
	r = read_fd(fd, UNIT_FILE_MAX, ret_buf, ret_len);
	if (r < 0)
		return policy_add_error(errors_to, path, 0, "cannot read: %s", STRERROR(r)) ?: r;
	return 1;
}

int unit_files_load(const char *const *paths, struct policy *errors_to, struct rule_settings *ret,
		    char **ret_source)
{
	struct unit_file *files;
	size_t n = 0, k = 0;
	int r = 0;

	for (const char *const *p = paths; *p; p++)
		n++;
	files = calloc(n ? n : 1, sizeof(*files));
	if (!files)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		char *buf = NULL;
		size_t len = 0;

		r = read_unit_file(paths[i], errors_to, &buf, &len);
		if (r == -ENOMEM)
			goto out;
		if (r > 0)
			files[k++] = (struct unit_file){ .path = paths[i], .buf = buf, .len = len };
	}
	r = unit_files_merge(files, k, errors_to, ret, ret_source);
out:
	for (size_t i = 0; i < k; i++)
		free((char *)files[i].buf);
	free(files);
	return r;
}

void rule_settings_format(const struct rule_settings *s, char *buf, size_t size)
{
	size_t l = 0;

	buf[0] = '\0';
	if (s->protect >= 0)
		l += (size_t)snprintf(buf + l, size - l, "Protect=%s",
				      s->protect == PROTECT_AUTO ? "auto" : s->protect ? "yes" : "no");
	if (s->lock_budget.set && l < size) {
		if (s->lock_budget.percent)
			l += (size_t)snprintf(buf + l, size - l, "%sLockBudget=%u%%", l ? " " : "",
					      s->lock_budget.percent);
		else
			l += (size_t)snprintf(buf + l, size - l, "%sLockBudget=%llu", l ? " " : "",
					      (unsigned long long)s->lock_budget.bytes);
	}
	if (s->exec_protect_limit && l < size) {
		if (s->exec_protect_limit == EXEC_PROTECT_LIMIT_MAX)
			l += (size_t)snprintf(buf + l, size - l, "%sExecProtectLimit=max", l ? " " : "");
		else
			l += (size_t)snprintf(buf + l, size - l, "%sExecProtectLimit=%llu", l ? " " : "",
					      (unsigned long long)s->exec_protect_limit);
	}
	if (s->prewarm && l < size)
		l += (size_t)snprintf(buf + l, size - l, "%sPrewarm=%s", l ? " " : "",
				      s->prewarm == PREWARM_YES ? "yes" : "no");
	if (s->prewarm_budget.set && l < size) {
		if (s->prewarm_budget.percent)
			snprintf(buf + l, size - l, "%sPrewarmBudget=%u%%", l ? " " : "", s->prewarm_budget.percent);
		else
			snprintf(buf + l, size - l, "%sPrewarmBudget=%llu", l ? " " : "",
				 (unsigned long long)s->prewarm_budget.bytes);
	}
}
