/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autoprotect.h"
#include "hashmap.h"
#include "util.h"

/* Samples kept per unit: enough for a window of 60 intervals; when more
 * come within a window the oldest go and the rate is over a shorter,
 * still recent, stretch. */
#define MAX_SAMPLES 64

struct sample {
	uint64_t faults, at_usec;
};

struct ap_unit {
	char *key;
	struct sample samples[MAX_SAMPLES]; /* oldest first */
	size_t n_samples;
	double unit_pressure; /* <0: unknown */
	bool protected_now;
	uint64_t since_usec, last_suffering_usec;
	double protected_rate, protected_pressure;
	bool have_rate;
	double rate, pressure;
	uint64_t span_usec; /* what the rate was taken over */
	bool over_budget; /* said so in this episode */
};

struct autoprotect {
	struct autoprotect_config c;
	struct hashmap units; /* key -> struct ap_unit */
	struct autoprotect_decision *decisions;
	size_t n_decisions, allocated;
	struct ap_unit **order; /* scratch for sorting candidates */
	size_t order_allocated;
};

int autoprotect_new(const struct autoprotect_config *c, struct autoprotect **ret)
{
	struct autoprotect *ap = calloc(1, sizeof(*ap));

	if (!ap)
		return -ENOMEM;
	ap->c = *c;
	hashmap_init(&ap->units, hash_string, equal_string);
	*ret = ap;
	return 0;
}

static void unit_free(struct ap_unit *u)
{
	if (!u)
		return;
	free(u->key);
	free(u);
}

struct autoprotect *autoprotect_free(struct autoprotect *ap)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	if (!ap)
		return NULL;
	while ((e = hashmap_next(&ap->units, &i, e)))
		unit_free(e->value);
	hashmap_done(&ap->units);
	free(ap->decisions);
	free(ap->order);
	free(ap);
	return NULL;
}

void autoprotect_reconfigure(struct autoprotect *ap, const struct autoprotect_config *c)
{
	ap->c = *c;
}

int autoprotect_watch(struct autoprotect *ap, const char *key)
{
	struct ap_unit *u;
	int r;

	if (hashmap_get(&ap->units, key))
		return 0;
	u = calloc(1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->key = strdup(key);
	u->unit_pressure = -1;
	if (!u->key) {
		unit_free(u);
		return -ENOMEM;
	}
	r = hashmap_put(&ap->units, u->key, u);
	if (r < 0) {
		unit_free(u);
		return r;
	}
	return 1;
}

void autoprotect_forget(struct autoprotect *ap, const char *key)
{
	/* Decisions point at keys: a forgotten unit leaves none behind. */
	for (size_t i = 0; i < ap->n_decisions; i++)
		if (streq(ap->decisions[i].key, key)) {
			memmove(&ap->decisions[i], &ap->decisions[i + 1],
				(ap->n_decisions - i - 1) * sizeof(ap->decisions[0]));
			ap->n_decisions--;
			i--;
		}
	unit_free(hashmap_remove(&ap->units, key));
}

bool autoprotect_watched(const struct autoprotect *ap, const char *key)
{
	return hashmap_get(&ap->units, key) != NULL;
}

size_t autoprotect_n_watched(const struct autoprotect *ap)
{
	return ap->units.n_items;
}

int autoprotect_foreach(const struct autoprotect *ap, int (*fn)(const char *key, void *userdata), void *userdata)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&ap->units, &i, e))) {
		int r = fn(((struct ap_unit *)e->value)->key, userdata);

		if (r != 0)
			return r;
	}
	return 0;
}

void autoprotect_sample(struct autoprotect *ap, const char *key, uint64_t faults, uint64_t at_usec,
			double unit_pressure_some)
{
	struct ap_unit *u = hashmap_get(&ap->units, key);
	struct sample *last;

	if (!u)
		return;
	u->unit_pressure = unit_pressure_some;
	last = u->n_samples ? &u->samples[u->n_samples - 1] : NULL;
	if (last && at_usec <= last->at_usec)
		return; /* no time passed: no rate to learn from it */
	/* A counter that went back (the cgroup was made anew, the estimate
	 * restarted): what came before says nothing about now. */
	if (last && faults < last->faults)
		u->n_samples = 0;
	if (u->n_samples == MAX_SAMPLES) {
		memmove(&u->samples[0], &u->samples[1], (MAX_SAMPLES - 1) * sizeof(u->samples[0]));
		u->n_samples--;
	}
	u->samples[u->n_samples++] = (struct sample){ .faults = faults, .at_usec = at_usec };
	/* Keep one sample at or before the window's start as the base. */
	while (u->n_samples >= 2 && u->samples[1].at_usec + ap->c.window_usec <= at_usec) {
		memmove(&u->samples[0], &u->samples[1], (u->n_samples - 1) * sizeof(u->samples[0]));
		u->n_samples--;
	}
}

/* The rate over the window, once the samples span at least half of it
 * (or fill the ring: as much as is kept): two readings a moment apart
 * are a spike, not suffering. */
static bool unit_rate(const struct autoprotect *ap, const struct ap_unit *u, double *ret_rate,
		      uint64_t *ret_span)
{
	const struct sample *first, *last;
	uint64_t span;

	if (u->n_samples < 2)
		return false;
	first = &u->samples[0];
	last = &u->samples[u->n_samples - 1];
	span = last->at_usec - first->at_usec;
	if (span == 0 || (span * 2 < ap->c.window_usec && u->n_samples < MAX_SAMPLES))
		return false;
	*ret_rate = (double)(last->faults - first->faults) * 1e6 / (double)span;
	*ret_span = span;
	return true;
}

static bool is_explicit(const struct autoprotect_explicit *ex, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (streq(ex[i].key, key))
			return true;
	return false;
}

static int add_decision(struct autoprotect *ap, const struct autoprotect_decision *d)
{
	if (ap->n_decisions == ap->allocated) {
		size_t n = ap->allocated ? ap->allocated * 2 : 16;
		struct autoprotect_decision *p = realloc(ap->decisions, n * sizeof(*p));

		if (!p)
			return -ENOMEM;
		ap->decisions = p;
		ap->allocated = n;
	}
	ap->decisions[ap->n_decisions++] = *d;
	return 0;
}

/* The most suffering first; equal rates by name, so that the order (and
 * a test) does not depend on the hash table. */
static int cmp_candidates(const void *a, const void *b)
{
	const struct ap_unit *x = *(struct ap_unit *const *)a, *y = *(struct ap_unit *const *)b;

	if (x->rate != y->rate)
		return x->rate > y->rate ? -1 : 1;
	return strcmp(x->key, y->key);
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* The suffering units in order (ap->order), most in need first: each
 * protected while its text fits in what is left of the budget, else
 * reported over budget once per episode. */
static int admit(struct autoprotect *ap, size_t n_cand, uint64_t left, uint64_t now_usec, autoprotect_cost_fn cost,
		 void *userdata)
{
	int r;

	for (size_t k = 0; k < n_cand; k++) {
		struct ap_unit *u = ap->order[k];
		uint64_t c = cost(userdata, u->key);
		bool fits = c <= left;

		/* No text: no process in it now (it exited, the cgroup stays):
		 * nothing to protect; it is a candidate again next round. */
		if (c == 0)
			continue;

		if (!fits && u->over_budget)
			continue; /* said already in this episode */
		r = add_decision(ap, &(struct autoprotect_decision){
					     .key = u->key,
					     .action = fits ? AUTOPROTECT_PROTECT : AUTOPROTECT_OVER_BUDGET,
					     .rate = u->rate,
					     .pressure_some = u->pressure,
					     .span_usec = u->span_usec,
					     .cost = c,
					     .budget_left = left,
				     });
		if (r < 0)
			return r;
		if (!fits) {
			u->over_budget = true;
			continue;
		}
		left -= c;
		u->over_budget = false;
		u->protected_now = true;
		u->since_usec = now_usec;
		u->protected_rate = u->rate;
		u->protected_pressure = u->pressure;
	}
	return 0;
}

int autoprotect_decide(struct autoprotect *ap, uint64_t now_usec, double system_pressure_some,
		       const struct autoprotect_explicit *explicit_units, size_t n_explicit,
		       autoprotect_cost_fn cost, void *userdata,
		       const struct autoprotect_decision **ret, size_t *ret_n)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0, n_cand = 0;
	uint64_t used = 0, left;
	int r;

	ap->n_decisions = 0;
	if (ap->order_allocated < ap->units.n_items) {
		struct ap_unit **o = realloc(ap->order, ap->units.n_items * sizeof(*o));

		if (!o)
			return -ENOMEM;
		ap->order = o;
		ap->order_allocated = ap->units.n_items;
	}
	for (size_t k = 0; k < n_explicit; k++)
		used = sat_add(used, explicit_units[k].cost);

	/* Who suffers now; who has been calm long enough. */
	while ((e = hashmap_next(&ap->units, &i, e))) {
		struct ap_unit *u = e->value;
		bool suffering;

		u->pressure = u->unit_pressure > system_pressure_some ? u->unit_pressure : system_pressure_some;
		u->have_rate = unit_rate(ap, u, &u->rate, &u->span_usec);
		if (!u->have_rate)
			u->rate = 0;
		if (is_explicit(explicit_units, n_explicit, u->key)) {
			/* An explicit rule took it over: it is not ours to decide. */
			u->protected_now = false;
			u->over_budget = false;
			continue;
		}
		suffering = u->have_rate && u->rate >= ap->c.fault_rate && u->pressure >= ap->c.pressure_some;
		if (suffering)
			u->last_suffering_usec = now_usec;
		else
			u->over_budget = false; /* the next episode is news again */
		if (u->protected_now) {
			if (!suffering && ap->c.calm_usec && now_usec - u->last_suffering_usec >= ap->c.calm_usec) {
				r = add_decision(ap, &(struct autoprotect_decision){
							     .key = u->key,
							     .action = AUTOPROTECT_RELEASE,
							     .rate = u->rate,
							     .pressure_some = u->pressure,
							     .span_usec = u->span_usec,
						     });
				if (r < 0)
					return r;
				u->protected_now = false;
				continue;
			}
			used = sat_add(used, cost(userdata, u->key));
			continue;
		}
		if (suffering)
			ap->order[n_cand++] = u;
	}

	/* No candidates: order may still be NULL, which qsort() must not get. */
	if (n_cand > 1)
		qsort(ap->order, n_cand, sizeof(ap->order[0]), cmp_candidates);
	left = ap->c.budget > used ? ap->c.budget - used : 0;
	r = admit(ap, n_cand, left, now_usec, cost, userdata);
	if (r < 0)
		return r;
	*ret = ap->decisions;
	*ret_n = ap->n_decisions;
	return 0;
}

bool autoprotect_is_protected(const struct autoprotect *ap, const char *key)
{
	const struct ap_unit *u = hashmap_get(&ap->units, key);

	return u && u->protected_now;
}

int autoprotect_get(const struct autoprotect *ap, const char *key, struct autoprotect_status *ret)
{
	const struct ap_unit *u = hashmap_get(&ap->units, key);

	if (!u)
		return -ENOENT;
	*ret = (struct autoprotect_status){
		.protected_now = u->protected_now,
		.since_usec = u->since_usec,
		.protected_rate = u->protected_rate,
		.protected_pressure = u->protected_pressure,
		.have_rate = u->have_rate,
		.rate = u->rate,
		.pressure_some = u->pressure,
		.over_budget = u->over_budget,
	};
	return 0;
}

void autoprotect_format(const struct autoprotect_status *s, const char *since, char *buf, size_t size)
{
	if (s->protected_now)
		snprintf(buf, size, "auto: protected since %s, %.0f text faults/s under PSI some %.1f%%", since,
			 s->protected_rate, s->protected_pressure);
	else if (!s->have_rate)
		snprintf(buf, size, "auto: watched, not protected (no rate yet)");
	else
		snprintf(buf, size, "auto: watched, not protected (%.0f text faults/s, PSI some %.1f%%%s)", s->rate,
			 s->pressure_some, s->over_budget ? ", over budget" : "");
}

const char *autoprotect_action_to_string(enum autoprotect_action a)
{
	switch (a) {
	case AUTOPROTECT_PROTECT:
		return "protect";
	case AUTOPROTECT_RELEASE:
		return "release";
	case AUTOPROTECT_OVER_BUDGET:
		return "over-budget";
	}
	return "invalid";
}
