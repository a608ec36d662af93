/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The latency histogram: bucket bounds, quantile estimates against the
 * exact quantiles of known samples, the exported cumulative buckets. */
#include <stdlib.h>

#include "latency.h"
#include "test.h"
#include "util.h"

static void test_bounds(void)
{
	/* Rising, ending in +Inf; 100 us and 100 s are bounds. */
	for (size_t i = 1; i < LATENCY_BUCKETS; i++)
		CHECK(latency_bucket_le(i) > latency_bucket_le(i - 1));
	CHECK(latency_bucket_le(LATENCY_BUCKETS - 1) == LATENCY_INF);
	CHECK_EQ_INT(latency_bucket_le(0), 10);
	CHECK_EQ_INT(latency_bucket_le(3), 100);
	CHECK_EQ_INT(latency_bucket_le(LATENCY_BUCKETS - 2), 100000000);
	/* No step wider than 28% on the fine grid. */
	for (size_t i = 4; i < LATENCY_BUCKETS - 1; i++)
		CHECK(latency_bucket_le(i) * 100 <= latency_bucket_le(i - 1) * 128);
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Within one fine bucket's width (28%) of the exact quantile, away from
 * the step between body and tail (where every value between them is a
 * right answer). */
static void test_quantiles(void)
{
	struct latency_histogram h = { 0 };
	uint64_t *v = calloc(10000, sizeof(*v));

	CHECK_EQ_INT(latency_quantile(&h, 0.5), 0);
	srand(1);
	for (size_t i = 0; v && i < 10000; i++) {
		/* a body around 350 us and a tail to 30 ms */
		v[i] = i % 100 == 0 ? 2000 + (uint64_t)(rand() % 28000) : 250 + (uint64_t)(rand() % 200);
		latency_add(&h, v[i]);
	}
	if (!v)
		return;
	qsort(v, 10000, sizeof(*v), cmp);
	CHECK_EQ_INT(h.count, 10000);
	CHECK_EQ_INT(h.max_us, v[9999]);
	for (double q = 0.1; q < 1; q += 0.1) {
		uint64_t exact = v[(size_t)(q * 10000)], est = latency_quantile(&h, q);

		CHECK(est * 100 >= exact * 72 && est * 72 <= exact * 100);
	}
	{
		uint64_t exact = v[9950], est = latency_quantile(&h, 0.995);

		if (!(est * 100 >= exact * 72 && est * 72 <= exact * 100))
			fprintf(stderr, "  p99.5: exact %llu, estimate %llu\n", (unsigned long long)exact,
				(unsigned long long)est);
		CHECK(est * 100 >= exact * 72 && est * 72 <= exact * 100);
	}
	CHECK(latency_quantile(&h, 1) == h.max_us);
	/* Never above the largest sample, even inside a wide bucket. */
	{
		struct latency_histogram one = { 0 };

		latency_add(&one, 130);
		CHECK(latency_quantile(&one, 0.5) <= 130 && latency_quantile(&one, 0.5) > 125);
		latency_add(&one, 200000000); /* past 100 s: the +Inf bucket */
		CHECK_EQ_INT(latency_quantile(&one, 1), 200000000);
	}
	free(v);
}

static void test_export(void)
{
	struct latency_histogram h = { 0 };
	struct latency_bucket b[LATENCY_EXPORT_BUCKETS];
	static const uint64_t le[LATENCY_EXPORT_BUCKETS - 1] = {
		10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000,
		100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
	};

	latency_add(&h, 5);
	latency_add(&h, 100);	   /* on a bound: counted in it */
	latency_add(&h, 101);
	latency_add(&h, 300);
	latency_add(&h, 20000000); /* 20 s: only +Inf */
	latency_export(&h, b);
	for (size_t i = 0; i < ELEMENTSOF(le); i++)
		CHECK_EQ_INT(b[i].le_us, le[i]);
	CHECK(b[LATENCY_EXPORT_BUCKETS - 1].le_us == LATENCY_INF);
	CHECK_EQ_INT(b[0].count, 1);   /* <= 10 us */
	CHECK_EQ_INT(b[3].count, 2);   /* <= 100 us */
	CHECK_EQ_INT(b[4].count, 3);   /* <= 250 us */
	CHECK_EQ_INT(b[5].count, 4);   /* <= 500 us */
	CHECK_EQ_INT(b[18].count, 4);  /* <= 10 s */
	CHECK_EQ_INT(b[19].count, 5);  /* +Inf: every sample */
	CHECK_EQ_INT(h.sum_us, 5 + 100 + 101 + 300 + 20000000);
}

TEST_MAIN(test_bounds, test_quantiles, test_export)
