/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

#include "test.h"
#include "util.h"

static void check_escape(const char *in, const char *want)
{
	int err;
	char *e = utf8_escape_invalid(in, &err);

	CHECK_EQ_INT(err, 0);
	if (!want) {
		CHECK(e == NULL);
	} else {
		CHECK_STREQ(e, want);
	}
	free(e);
}

static void test_utf8_escape(void)
{
	int err;
	char *e;

	check_escape("", NULL);
	check_escape("/system.slice/nginx.service", NULL);
	check_escape("app\\x2dweb.service", NULL); /* systemd's own escape stays */
	check_escape("/caf\xc3\xa9/\xe2\x82\xac/\xf0\x9f\x98\x80", NULL);
	check_escape("/bad\xff" "name", "/bad\\xffname");
	check_escape("\xc3", "\\xc3");			  /* cut short at the end */
	check_escape("\xc3(x", "\\xc3(x");		  /* bad continuation */
	check_escape("\xc0\xaf", "\\xc0\\xaf");		  /* overlong '/' */
	check_escape("\xe0\x80\xaf", "\\xe0\\x80\\xaf");  /* overlong, 3 bytes */
	check_escape("\xed\xa0\x80", "\\xed\\xa0\\x80");  /* a surrogate */
	check_escape("\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"); /* past U+10FFFF */
	check_escape("a\nb\tc\x7f", "a\\x0ab\\x09c\\x7f");
	e = utf8_escape_invalid(NULL, &err);
	CHECK(e == NULL);
	CHECK_EQ_INT(err, 0);
	e = utf8_escape_invalid_text("line 1\n\tbad \xfe\n", &err);
	CHECK_STREQ(e, "line 1\n\tbad \\xfe\n");
	free(e);
}

TEST_MAIN(test_utf8_escape)
