/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one INI line reader, and the two searches that use it besides the
 * policy parser: a unit file's [X-ExecGuard] section and its Protect=. */
#include <stdlib.h>

#include "ini-lines.h"
#include "test.h"
#include "unit-files.h"
#include "util.h"

static bool eq(const char *p, size_t n, const char *want)
{
	return p && n == strlen(want) && memcmp(p, want, n) == 0;
}

static void test_kinds(void)
{
	/* No NUL at the end: the reader must stay within the length. */
	static const char text[] = "\n"
				   "  # comment [X-ExecGuard]\n"
				   "; another\n"
				   " [Rule web]   # a rule\r\n"
				   "Key = a value ; comment\n"
				   "Glob=/opt/a#b /opt/c;d\t# tab, then a comment\n"
				   "[Unclosed\n"
				   "[Daemon] Backend=x\n"
				   "no equals sign\n"
				   "=empty key\n"
				   "Last=line";
	struct ini_cursor c = { .pos = text, .end = text + sizeof(text) - 1 };
	struct ini_line l;

	CHECK(ini_next_line(&c, &l) && l.kind == INI_BLANK && l.number == 1);
	CHECK(ini_next_line(&c, &l) && l.kind == INI_COMMENT && l.number == 2);
	CHECK(ini_next_line(&c, &l) && l.kind == INI_COMMENT);
	CHECK(ini_next_line(&c, &l) && l.kind == INI_SECTION && eq(l.name, l.name_len, "Rule web"));
	CHECK(!l.unclosed && !l.trailing && eq(l.text, l.len, "[Rule web]"));
	CHECK(ini_line_is_section(&l, "Rule web") && !ini_line_is_section(&l, "Rule"));
	CHECK(ini_next_line(&c, &l) && l.kind == INI_ASSIGNMENT && eq(l.name, l.name_len, "Key"));
	CHECK(eq(l.value, l.value_len, "a value") && ini_line_is_key(&l, "Key"));
	CHECK(ini_next_line(&c, &l) && l.kind == INI_ASSIGNMENT);
	CHECK(eq(l.value, l.value_len, "/opt/a#b /opt/c;d"));
	CHECK(ini_next_line(&c, &l) && l.kind == INI_SECTION && l.unclosed);
	CHECK(ini_next_line(&c, &l) && l.kind == INI_SECTION && l.trailing && eq(l.name, l.name_len, "Daemon"));
	CHECK(!ini_line_is_section(&l, "X") && l.number == 8);
	CHECK(ini_next_line(&c, &l) && l.kind == INI_OTHER);
	CHECK(ini_next_line(&c, &l) && l.kind == INI_ASSIGNMENT && l.name_len == 0);
	CHECK(ini_next_line(&c, &l) && l.kind == INI_ASSIGNMENT && eq(l.value, l.value_len, "line"));
	CHECK(l.number == 11 && l.raw == text + sizeof(text) - 1 - strlen("Last=line"));
	CHECK(!ini_next_line(&c, &l));
}

static void test_bom(void)
{
	CHECK_EQ_INT(ini_bom_len("\xef\xbb\xbf[A]", 6), 3);
	CHECK_EQ_INT(ini_bom_len("\xef\xbb", 2), 0);
	CHECK_EQ_INT(ini_bom_len("[A]", 3), 0);
}

/* A comment or a value that names the section is not the section:
 * execguardctl check-config looked for the text anywhere in a line. */
static void test_unit_section_search(void)
{
	static const char comment_only[] = "[Service]\n# see [X-ExecGuard] in execguard.conf(5)\n"
					   "Environment=X=[X-ExecGuard]\n";
	static const char real[] = "\xef\xbb\xbf[Service]\nExecStart=/bin/true\n"
				   "  [X-ExecGuard]   # ours\nProtect = yes ; comment\n"
				   "[Install]\nProtect=no\n";

	CHECK(!unit_file_has_section(comment_only, sizeof(comment_only) - 1));
	CHECK(unit_file_has_section(real, sizeof(real) - 1));
	CHECK_EQ_INT(unit_file_protect_line(real, sizeof(real) - 1), 4);
	CHECK_EQ_INT(unit_file_protect_line(comment_only, sizeof(comment_only) - 1), 0);
}

TEST_MAIN(test_kinds, test_bom, test_unit_section_search)
