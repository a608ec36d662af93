/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A tiny test harness: each check prints where it failed; main()
 * returns the number of failures (0 passes, 77 skips for meson). */
#pragma once

#include <stdio.h>
#include <string.h>

static int test_failures;
static int test_checks;

#define CHECK(cond)                                                              \
	do {                                                                     \
		test_checks++;                                                   \
		if (!(cond)) {                                                   \
			fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
			test_failures++;                                         \
		}                                                                \
	} while (0)

#define CHECK_EQ_INT(a, b)                                                        \
	do {                                                                      \
		long long _a = (long long)(a), _b = (long long)(b);               \
		test_checks++;                                                    \
		if (_a != _b) {                                                   \
			fprintf(stderr, "%s:%d: %s == %lld, expected %s == %lld\n", \
				__FILE__, __LINE__, #a, _a, #b, _b);              \
			test_failures++;                                          \
		}                                                                 \
	} while (0)

#define CHECK_STREQ(a, b)                                                          \
	do {                                                                       \
		const char *_a = (a), *_b = (b);                                   \
		test_checks++;                                                     \
		if (!_a || !_b || strcmp(_a, _b) != 0) {                           \
			fprintf(stderr, "%s:%d: %s == \"%s\", expected \"%s\"\n",  \
				__FILE__, __LINE__, #a, _a ? _a : "(null)", _b ? _b : "(null)"); \
			test_failures++;                                           \
		}                                                                  \
	} while (0)

#define TEST_MAIN(...)                                                        \
	int main(void)                                                        \
	{                                                                     \
		void (*tests[])(void) = { __VA_ARGS__ };                      \
		for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++) \
			tests[i]();                                           \
		fprintf(stderr, "%d checks, %d failed\n", test_checks, test_failures); \
		return test_failures ? 1 : 0;                                 \
	}
