/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Exec-to-decision latency as a histogram of fixed buckets, counted
 * since the daemon started: adding a sample and reading a quantile cost
 * a few dozen steps whatever the number of samples (a property read
 * sorted 16,384 samples before), and the buckets are what Prometheus
 * wants of a histogram. Pure; the daemon and execguardctl share it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Fine buckets: ten per decade from 100 us to 100 s (1, 1.25, 1.6, 2,
 * 2.5, 3.15, 4, 5, 6.3, 8), a few below, and one past 100 s. */
#define LATENCY_BUCKETS 65
#define LATENCY_INF UINT64_MAX

struct latency_histogram {
	uint64_t counts[LATENCY_BUCKETS]; /* per bucket, not cumulative */
	uint64_t count, sum_us;
	uint64_t max_us;
};

/* The upper bound of bucket i in microseconds; LATENCY_INF for the last. */
uint64_t latency_bucket_le(size_t i);
void latency_add(struct latency_histogram *h, uint64_t us);
/* The q-quantile (0 < q <= 1) estimated as Prometheus's
 * histogram_quantile() does: linear within the bucket that holds it,
 * never above the largest sample. 0 without samples. */
uint64_t latency_quantile(const struct latency_histogram *h, double q);

/* What is exported (D-Bus, metrics): cumulative counts at 1, 2.5 and 5
 * of each decade from 10 us to 10 s, and +Inf (LATENCY_INF). */
#define LATENCY_EXPORT_BUCKETS 20
struct latency_bucket {
	uint64_t le_us;
	uint64_t count; /* samples <= le_us: cumulative */
};
void latency_export(const struct latency_histogram *h, struct latency_bucket ret[LATENCY_EXPORT_BUCKETS]);
