/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The text-fault estimate's pure parts: /proc/PID/stat and maps lines as
 * a process can shape them (its comm, its file names), and the samples
 * steps fed from the same bytes, which must never make the counter go
 * back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "textfault.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int cmp_pid(const void *a, const void *b)
{
	const struct text_faults_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data, *p = buf, *end = buf + size;
	struct text_faults_estimate e = TEXT_FAULTS_ESTIMATE_INIT;
	struct text_faults_proc a[32], b[32];
	struct text_faults_residency_delta d;
	uint64_t maj, start, bits[8] = { 0 }, last = 0;
	size_t na = 0, nb = 0, n;

	(void)text_faults_parse_stat(buf, size, &maj, &start);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		struct text_faults_range r;

		if (text_faults_parse_maps_line(p, l, &r) > 0)
			free(r.path);
		p = nl ? nl + 1 : end;
	}

	/* The bytes as residency vectors, one after another. */
	for (size_t off = 0; off < size; off += 512) {
		n = size - off < 512 ? size - off : 512;
		text_faults_residency_step(bits, data + off, n, data[off] % 64, &d);
		if (d.windows > d.came_back || d.came_back > n || d.evicted > n)
			abort();
		if (text_faults_estimate_step(&e, d.evicted, d.windows, d.came_back) < last)
			abort();
		last = e.faults;
	}
	/* And as two samples of processes. */
	for (size_t i = 0; i + 3 <= size && (na < 32 || nb < 32); i += 3) {
		struct text_faults_proc q = { .pid = data[i] % 40, .start_ticks = data[i + 1] % 8,
					      .majflt = data[i + 2] };

		if (i % 2 && na < 32)
			a[na++] = q;
		else if (nb < 32)
			b[nb++] = q;
	}
	qsort(a, na, sizeof(a[0]), cmp_pid);
	qsort(b, nb, sizeof(b[0]), cmp_pid);
	if (text_faults_proc_delta(a, na, size % 8, b, nb) > 255ULL * nb)
		abort();
	return 0;
}
