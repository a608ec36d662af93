/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "latency.h"
#include "util.h"

/* Renard's R10 series: ten steps of about 26% per decade, among them the
 * 1, 2.5 and 5 that are exported. Times ten per decade from 100 us. */
static const uint64_t r10[] = { 100, 125, 160, 200, 250, 315, 400, 500, 630, 800 };
/* Below the fine grid, where exec-to-decision never is on a real machine. */
static const uint64_t low[] = { 10, 25, 50 };

uint64_t latency_bucket_le(size_t i)
{
	uint64_t scale = 1;

	if (i < ELEMENTSOF(low))
		return low[i];
	i -= ELEMENTSOF(low);
	if (i >= LATENCY_BUCKETS - ELEMENTSOF(low) - 2)
		return i == LATENCY_BUCKETS - ELEMENTSOF(low) - 2 ? 100000000 : LATENCY_INF;
	for (size_t d = i / ELEMENTSOF(r10); d; d--)
		scale *= 10;
	return r10[i % ELEMENTSOF(r10)] * scale;
}

/* The first bucket whose bound is at least us: a binary search. */
static size_t bucket_of(uint64_t us)
{
	size_t lo = 0, hi = LATENCY_BUCKETS - 1;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (latency_bucket_le(mid) >= us)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

void latency_add(struct latency_histogram *h, uint64_t us)
{
	h->counts[bucket_of(us)]++;
	h->count++;
	h->sum_us += us;
	if (us > h->max_us)
		h->max_us = us;
}

uint64_t latency_quantile(const struct latency_histogram *h, double q)
{
	double rank = q * (double)h->count, below = 0;

	if (!h->count)
		return 0;
	for (size_t i = 0; i < LATENCY_BUCKETS; i++) {
		double lo = i ? (double)latency_bucket_le(i - 1) : 0, hi, v;

		if (below + (double)h->counts[i] < rank || !h->counts[i]) {
			below += (double)h->counts[i];
			continue;
		}
		if (latency_bucket_le(i) == LATENCY_INF)
			return h->max_us;
		hi = (double)latency_bucket_le(i);
		v = lo + (hi - lo) * (rank - below) / (double)h->counts[i];
		return v > (double)h->max_us ? h->max_us : (uint64_t)(v + 0.5);
	}
	return h->max_us;
}

void latency_export(const struct latency_histogram *h, struct latency_bucket ret[LATENCY_EXPORT_BUCKETS])
{
	uint64_t cum = 0;
	size_t k = 0;

	for (size_t i = 0; i < LATENCY_BUCKETS && k < LATENCY_EXPORT_BUCKETS; i++) {
		uint64_t le = latency_bucket_le(i), m = le;

		cum += h->counts[i];
		while (m >= 10 && m % 10 == 0)
			m /= 10;
		/* 1, 2.5 (25) and 5 of a decade, up to 10 s, then +Inf */
		if ((le <= 10000000 && (m == 1 || m == 25 || m == 5)) || le == LATENCY_INF)
			ret[k++] = (struct latency_bucket){ .le_us = le, .count = cum };
	}
}
