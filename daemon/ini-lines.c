/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <string.h>

#include "ini-lines.h"

static bool is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static void trim(const char **p, size_t *len)
{
	while (*len && is_blank(**p)) {
		(*p)++;
		(*len)--;
	}
	while (*len && (is_blank((*p)[*len - 1]) || (*p)[*len - 1] == '\r'))
		(*len)--;
}

size_t ini_bom_len(const char *buf, size_t len)
{
	return len >= 3 && memcmp(buf, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
}

/* Cut at the first '#' or ';' that follows a blank. */
static size_t without_inline_comment(const char *l, size_t len)
{
	for (size_t i = 1; i < len; i++)
		if ((l[i] == '#' || l[i] == ';') && is_blank(l[i - 1])) {
			len = i;
			break;
		}
	while (len && is_blank(l[len - 1]))
		len--;
	return len;
}

bool ini_next_line(struct ini_cursor *c, struct ini_line *ret)
{
	const char *l, *raw, *nl, *eq;
	size_t len;

	if (c->pos >= c->end)
		return false;
	l = raw = c->pos;
	nl = memchr(l, '\n', (size_t)(c->end - l));
	len = nl ? (size_t)(nl - l) : (size_t)(c->end - l);
	c->pos = nl ? nl + 1 : c->end;
	trim(&l, &len);
	*ret = (struct ini_line){ .number = ++c->line, .raw = raw, .text = l, .len = len };
	if (len == 0) {
		ret->kind = INI_BLANK;
		return true;
	}
	if (l[0] == '#' || l[0] == ';') {
		ret->kind = INI_COMMENT;
		return true;
	}
	len = ret->len = without_inline_comment(l, len);
	if (l[0] == '[') {
		const char *close = memchr(l, ']', len);

		ret->kind = INI_SECTION;
		ret->name = l + 1;
		ret->name_len = close ? (size_t)(close - l - 1) : len - 1;
		ret->unclosed = !close;
		ret->trailing = close && close != l + len - 1;
		return true;
	}
	eq = memchr(l, '=', len);
	if (!eq) {
		ret->kind = INI_OTHER;
		return true;
	}
	ret->kind = INI_ASSIGNMENT;
	ret->name = l;
	ret->name_len = (size_t)(eq - l);
	trim(&ret->name, &ret->name_len);
	ret->value = eq + 1;
	ret->value_len = len - (size_t)(eq + 1 - l);
	trim(&ret->value, &ret->value_len);
	return true;
}

bool ini_line_is_section(const struct ini_line *l, const char *name)
{
	return l->kind == INI_SECTION && !l->unclosed && l->name_len == strlen(name) &&
	       memcmp(l->name, name, l->name_len) == 0;
}

bool ini_line_is_key(const struct ini_line *l, const char *key)
{
	return l->kind == INI_ASSIGNMENT && l->name_len == strlen(key) &&
	       memcmp(l->name, key, l->name_len) == 0;
}
