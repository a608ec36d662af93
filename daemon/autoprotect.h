/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Protect=auto: which watched units to protect, and when to let them go.
 * Pure: it is fed plain numbers (each unit's text fault counter and when
 * it was read, memory PSI "some" avg10, budgets, what explicit rules
 * protect) and answers with decisions; the manager reads the files and
 * acts through the backend. See execguardd(8), "PROTECT=AUTO". */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct autoprotect_config {
	double fault_rate;     /* text faults per second that mean suffering */
	double pressure_some;  /* PSI some avg10 (percent) that means pressure; 0: faults alone */
	uint64_t window_usec;  /* the rate is taken over this window */
	uint64_t calm_usec;    /* released after this long without suffering; 0: never */
	uint64_t budget;       /* bytes all protected units may take together; UINT64_MAX: no bound */
};

/* A unit an explicit rule (Protect=yes) protects: never pushed out, and
 * its text counts against the budget before any auto-protected unit. */
struct autoprotect_explicit {
	const char *key;
	uint64_t cost; /* bytes */
};

/* What protecting a unit would cost (bytes of text, already capped by the
 * unit's own budget); asked only of candidates and of units protected
 * by this engine. 0: nothing to protect (no process): not decided. */
typedef uint64_t (*autoprotect_cost_fn)(void *userdata, const char *key);

enum autoprotect_action {
	AUTOPROTECT_PROTECT,	 /* suffers, fits: protect it now */
	AUTOPROTECT_RELEASE,	 /* calm for the calm period: release it */
	AUTOPROTECT_OVER_BUDGET, /* suffers but does not fit (said once per episode) */
};

struct autoprotect_decision {
	const char *key; /* the engine's copy: valid until the unit is forgotten */
	enum autoprotect_action action;
	double rate;	       /* text faults per second over span_usec */
	double pressure_some;  /* the PSI figure that counted (the larger of system and unit) */
	uint64_t span_usec;    /* the stretch the rate was taken over */
	uint64_t cost;	       /* bytes (PROTECT, OVER_BUDGET) */
	uint64_t budget_left;  /* bytes left before this decision */
};

/* What status and explain show for one watched unit. */
struct autoprotect_status {
	bool protected_now;
	uint64_t since_usec;	     /* CLOCK_MONOTONIC of the decision to protect */
	double protected_rate;	     /* the evidence then */
	double protected_pressure;
	bool have_rate;		     /* enough samples for a rate */
	double rate;		     /* the latest rate and PSI */
	double pressure_some;
	bool over_budget;	     /* suffers, does not fit */
};

struct autoprotect;

int autoprotect_new(const struct autoprotect_config *c, struct autoprotect **ret);
struct autoprotect *autoprotect_free(struct autoprotect *ap);
/* New thresholds (reload); what is protected stays until the calm rule. */
void autoprotect_reconfigure(struct autoprotect *ap, const struct autoprotect_config *c);

/* Start watching a unit (a no-op when it is watched already). */
int autoprotect_watch(struct autoprotect *ap, const char *key);
/* The unit is gone or no longer Protect=auto: forgotten with its state. */
void autoprotect_forget(struct autoprotect *ap, const char *key);
bool autoprotect_watched(const struct autoprotect *ap, const char *key);
size_t autoprotect_n_watched(const struct autoprotect *ap);
/* Calls fn for each watched unit (fn must not forget units); stops at a
 * non-zero return and returns it. */
int autoprotect_foreach(const struct autoprotect *ap, int (*fn)(const char *key, void *userdata),
			void *userdata);

/* A reading of the unit's text fault counter (it only grows; a smaller
 * one starts the unit's history anew) and of its own memory PSI some
 * avg10 (<0: unknown). Unknown units are ignored. */
void autoprotect_sample(struct autoprotect *ap, const char *key, uint64_t faults, uint64_t at_usec,
			double unit_pressure_some);

/* Decide now: releases first (they free budget), then the suffering
 * units by rate, the highest first, while they fit in the budget left
 * by the explicit units and the auto-protected ones. Units in explicit
 * are not decided about. The decisions (in *ret, n in *ret_n) stay
 * valid until the next call. */
int autoprotect_decide(struct autoprotect *ap, uint64_t now_usec, double system_pressure_some,
		       const struct autoprotect_explicit *explicit_units, size_t n_explicit,
		       autoprotect_cost_fn cost, void *userdata,
		       const struct autoprotect_decision **ret, size_t *ret_n);

bool autoprotect_is_protected(const struct autoprotect *ap, const char *key);
/* -ENOENT when the unit is not watched. */
int autoprotect_get(const struct autoprotect *ap, const char *key, struct autoprotect_status *ret);

/* "12 text faults/s under PSI some 30.5%" style phrase for status and
 * explain: "auto: protected since <since>, ..." or "auto: watched, not
 * protected (...)". since is the caller's rendering of since_usec. */
void autoprotect_format(const struct autoprotect_status *s, const char *since, char *buf, size_t size);

const char *autoprotect_action_to_string(enum autoprotect_action a);
