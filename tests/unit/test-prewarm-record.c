/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

#include "prewarm-record.h"
#include "test.h"
#include "util.h"

static const char good[] = "execguard-prewarm 1\n"
			   "unit web.service\n"
			   "time 1764669600\n"
			   "file 8:1 1234 65536 1764669000.000000001 /usr/bin/a\\x20b\n"
			   "range 0 8192 3\n"
			   "range 16384 4096 1\n"
			   "file 259:3 99 4096 0.000000000 /lib/libx.so\n"
			   "range 0 4096 7\n"
			   "end 2 3\n";

static int parse(const char *s, struct prewarm_record *r, const char **why)
{
	unsigned line;

	return prewarm_record_parse(s, strlen(s), r, why, &line);
}

static void test_parse_good(void)
{
	struct prewarm_record r = { 0 };
	const char *why = NULL;

	CHECK_EQ_INT(parse(good, &r, &why), 0);
	CHECK_STREQ(r.unit, "web.service");
	CHECK_EQ_INT(r.time, 1764669600);
	CHECK_EQ_INT(r.n_files, 2);
	CHECK_STREQ(r.files[0].path, "/usr/bin/a b");
	CHECK_EQ_INT(r.files[0].dev_major, 8);
	CHECK_EQ_INT(r.files[0].dev_minor, 1);
	CHECK_EQ_INT(r.files[0].inode, 1234);
	CHECK_EQ_INT(r.files[0].size, 65536);
	CHECK_EQ_INT(r.files[0].mtime_sec, 1764669000);
	CHECK_EQ_INT(r.files[0].mtime_nsec, 1);
	CHECK_EQ_INT(r.files[0].n_ranges, 2);
	CHECK_EQ_INT(r.files[0].ranges[1].offset, 16384);
	CHECK_EQ_INT(r.files[0].ranges[1].heat, 1);
	CHECK_EQ_INT(r.files[1].dev_major, 259);
	CHECK_EQ_INT(prewarm_record_bytes(&r), 8192 + 4096 + 4096);
	CHECK_EQ_INT(prewarm_record_n_ranges(&r), 3);
	prewarm_record_done(&r);
}

static void test_round_trip(void)
{
	struct prewarm_record r = { 0 }, back = { 0 };
	struct prewarm_range ranges[2] = { { 0, 4096, 2 }, { 1 << 20, 3 * 4096, 9 } };
	struct prewarm_file f = {
		.dev_major = 254, .dev_minor = 0, .inode = 42, .size = 2 << 20,
		.mtime_sec = 1700000000, .mtime_nsec = 999999999,
		.path = (char *)"/opt/odd \\name\n\x7f\xc3\xa9", .ranges = ranges, .n_ranges = 2,
	};
	const char *why;
	char *buf;
	size_t len;

	r = (struct prewarm_record){ .unit = (char *)"/a cgroup/x", .time = 5, .files = &f, .n_files = 1 };
	CHECK_EQ_INT(prewarm_record_format(&r, &buf, &len), 0);
	CHECK(strchr(buf, ' ') != NULL);
	CHECK(memchr(buf, '\x7f', len) == NULL);
	CHECK_EQ_INT(prewarm_record_parse(buf, len, &back, &why, &(unsigned){ 0 }), 0);
	CHECK_STREQ(back.unit, "/a cgroup/x");
	CHECK_EQ_INT(back.n_files, 1);
	CHECK_STREQ(back.files[0].path, f.path);
	CHECK_EQ_INT(back.files[0].mtime_nsec, 999999999);
	CHECK_EQ_INT(back.files[0].n_ranges, 2);
	CHECK_EQ_INT(back.files[0].ranges[1].offset, 1 << 20);
	CHECK_EQ_INT(back.files[0].ranges[1].length, 3 * 4096);
	CHECK_EQ_INT(back.files[0].ranges[1].heat, 9);
	prewarm_record_done(&back);
	free(buf);

	/* A record the parser would refuse is not written. */
	ranges[1].offset = 2;
	CHECK_EQ_INT(prewarm_record_format(&r, &buf, &len), -EINVAL);
	ranges[1].offset = 2 << 20;
	CHECK_EQ_INT(prewarm_record_format(&r, &buf, &len), -EINVAL);
	ranges[1].offset = 1 << 20;
	f.path = (char *)"relative";
	CHECK_EQ_INT(prewarm_record_format(&r, &buf, &len), -EINVAL);
}

/* Too many ranges: the coldest are left out, the text stays parseable
 * and within the byte bound. */
static void test_bounds(void)
{
	size_t n = PREWARM_RECORD_MAX_RANGES + 100;
	struct prewarm_range *ranges = calloc(n, sizeof(*ranges));
	struct prewarm_file f = { .inode = 1, .size = (uint64_t)n * 8192, .path = (char *)"/big" };
	struct prewarm_record r = { .unit = (char *)"u", .files = &f, .n_files = 1 }, back = { 0 };
	const char *why;
	char *buf;
	size_t len;

	for (size_t i = 0; i < n; i++)
		ranges[i] = (struct prewarm_range){ (uint64_t)i * 8192, 4096, i < 200 ? 1 : 2 };
	f.ranges = ranges;
	f.n_ranges = n;
	CHECK_EQ_INT(prewarm_record_format(&r, &buf, &len), 0);
	CHECK(len <= PREWARM_RECORD_MAX_BYTES);
	CHECK_EQ_INT(prewarm_record_parse(buf, len, &back, &why, &(unsigned){ 0 }), 0);
	CHECK(prewarm_record_n_ranges(&back) <= PREWARM_RECORD_MAX_RANGES);
	CHECK(prewarm_record_n_ranges(&back) > 0);
	/* the coldest (heat 1) went */
	for (size_t k = 0; k < back.files[0].n_ranges; k++)
		CHECK(back.files[0].ranges[k].heat == 2);
	prewarm_record_done(&back);
	free(buf);
	free(ranges);

	/* The parser's own bound. */
	buf = malloc(PREWARM_RECORD_MAX_BYTES + 1);
	memset(buf, '\n', PREWARM_RECORD_MAX_BYTES + 1);
	CHECK_EQ_INT(prewarm_record_parse(buf, PREWARM_RECORD_MAX_BYTES + 1, &back, &why, &(unsigned){ 0 }), -E2BIG);
	free(buf);
}

static void test_corrupt(void)
{
	static const struct {
		const char *text;
		int error;
	} bad[] = {
		{ "", -EINVAL },
		{ "execguard-prewarm 2\nunit a\ntime 1\nend 0 0\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\n", -EINVAL },	      /* no end */
		{ "execguard-prewarm 1\nunit a\ntime 1\nend 0 0", -EINVAL },  /* no newline */
		{ "execguard-prewarm 1\nunit a\ntime 1\nend 1 0\n", -EINVAL }, /* counts */
		{ "execguard-prewarm 1\nunit a\ntime 1\nend 0 0\nend 0 0\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nrange 0 1 1\nend 0 1\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 01\nend 0 0\n", -EINVAL },
		{ "execguard-prewarm 1\nunit \\x00\ntime 1\nend 0 0\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a b\ntime 1\nend 0 0\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\\x2\ntime 1\nend 0 0\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 10 1.000000000 x\nrange 0 1 1\nend 1 1\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 10 1.1000000000 /x\nrange 0 1 1\nend 1 1\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 10 1.000000000 /x\nrange 4 8 1\nend 1 1\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 100 1.000000000 /x\nrange 0 8 1\nrange 4 8 1\nend 1 2\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 100 1.000000000 /x\nrange 0 0 1\nend 1 1\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 100 1.000000000 /x\nrange 0 8 0\nend 1 1\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 100 1.000000000 /x\nend 1 0\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 18446744073709551616 1.000000000 /x\nrange 0 8 1\nend 1 1\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nfile 8:1 1 100 1.000000000 /x\nrange 18446744073709551615 1 1\nend 1 1\n", -EINVAL },
		{ "execguard-prewarm 1\nunit a\ntime 1\nbogus\nend 0 0\n", -EINVAL },
	};
	struct prewarm_record r = { .unit = (char *)"untouched" };

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		const char *why = NULL;
		int ret = parse(bad[i].text, &r, &why);

		if (ret != bad[i].error)
			fprintf(stderr, "case %zu: %d (%s)\n", i, ret, why ? why : "-");
		CHECK_EQ_INT(ret, bad[i].error);
		CHECK(why != NULL);
		CHECK_STREQ(r.unit, "untouched");
	}
	/* Every prefix of a good record is refused (a torn write). */
	for (size_t l = 0; l < strlen(good); l++) {
		unsigned line;
		const char *why;

		CHECK(prewarm_record_parse(good, l, &r, &why, &line) < 0);
	}
}

static void test_ranges_from_heat(void)
{
	/* pages: 0 1 . . 4 . 6 7 . . . . . 13 (partial) */
	uint8_t heat[14] = { 1, 3, 0, 0, 2, 0, 1, 1, 0, 0, 0, 0, 0, 5 };
	struct prewarm_range *r = NULL;
	size_t n = 0;

	CHECK_EQ_INT(prewarm_ranges_from_heat(heat, 14, 4096, 13 * 4096 + 100, 0, &r, &n), 0);
	CHECK_EQ_INT(n, 4);
	CHECK_EQ_INT(r[0].offset, 0);
	CHECK_EQ_INT(r[0].length, 8192);
	CHECK_EQ_INT(r[0].heat, 3);
	CHECK_EQ_INT(r[1].offset, 4 * 4096);
	CHECK_EQ_INT(r[2].length, 8192);
	CHECK_EQ_INT(r[3].offset, 13 * 4096);
	CHECK_EQ_INT(r[3].length, 100);
	CHECK_EQ_INT(r[3].heat, 5);
	free(r);
	r = NULL;
	n = 0;
	/* Gaps of up to 2 cold pages are read too: one request. */
	CHECK_EQ_INT(prewarm_ranges_from_heat(heat, 14, 4096, 14 * 4096, 2, &r, &n), 0);
	CHECK_EQ_INT(n, 2);
	CHECK_EQ_INT(r[0].offset, 0);
	CHECK_EQ_INT(r[0].length, 8 * 4096);
	CHECK_EQ_INT(r[0].heat, 3);
	CHECK_EQ_INT(r[1].offset, 13 * 4096);
	free(r);
}

static void test_plan(void)
{
	struct prewarm_range a[] = { { 0, 100, 1 }, { 200, 50, 5 }, { 300, 1000, 5 } };
	struct prewarm_range b[] = { { 0, 10, 9 }, { 20, 30, 1 } };
	struct prewarm_file f[] = {
		{ .size = 2000, .path = (char *)"/a", .ranges = a, .n_ranges = 3 },
		{ .size = 2000, .path = (char *)"/b", .ranges = b, .n_ranges = 2 },
	};
	struct prewarm_record r = { .unit = (char *)"u", .files = f, .n_files = 2 };
	struct prewarm_step *s;
	size_t n;
	uint64_t bytes;

	CHECK_EQ_INT(prewarm_plan(&r, UINT64_MAX, &s, &n, &bytes), 0);
	CHECK_EQ_INT(n, 5);
	CHECK_EQ_INT(bytes, 1190);
	/* hottest first, then file, then offset */
	CHECK(s[0].file == 1 && s[0].range == 0);
	CHECK(s[1].file == 0 && s[1].range == 1);
	CHECK(s[2].file == 0 && s[2].range == 2);
	CHECK(s[3].file == 0 && s[3].range == 0);
	CHECK(s[4].file == 1 && s[4].range == 1);
	free(s);
	/* 180 bytes: 10 + 50 fit, 1000 does not, 100 does, 30 does not */
	CHECK_EQ_INT(prewarm_plan(&r, 180, &s, &n, &bytes), 0);
	CHECK_EQ_INT(n, 3);
	CHECK_EQ_INT(bytes, 160);
	CHECK(s[2].file == 0 && s[2].range == 0);
	free(s);
	CHECK_EQ_INT(prewarm_plan(&r, 0, &s, &n, &bytes), 0);
	CHECK_EQ_INT(n, 0);
	free(s);
}

static void test_filename(void)
{
	char buf[300];

	CHECK_EQ_INT(prewarm_record_filename("nginx.service", buf, sizeof(buf)), 0);
	CHECK_STREQ(buf, "nginx.service.prewarm");
	CHECK_EQ_INT(prewarm_record_filename("/system.slice/a b", buf, sizeof(buf)), 0);
	CHECK_STREQ(buf, "%2Fsystem.slice%2Fa%20b.prewarm");
	CHECK_EQ_INT(prewarm_record_filename(".hidden", buf, sizeof(buf)), 0);
	CHECK_STREQ(buf, "%2Ehidden.prewarm");
	CHECK_EQ_INT(prewarm_record_filename("", buf, sizeof(buf)), -EINVAL);
	{
		char longkey[260];

		memset(longkey, 'a', sizeof(longkey) - 1);
		longkey[sizeof(longkey) - 1] = '\0';
		CHECK_EQ_INT(prewarm_record_filename(longkey, buf, sizeof(buf)), -ENAMETOOLONG);
	}
}

TEST_MAIN(test_parse_good, test_round_trip, test_bounds, test_corrupt, test_ranges_from_heat, test_plan,
	  test_filename)
