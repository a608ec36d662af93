/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The Protect=auto engine, fed numbers: who is protected, in which
 * order, within which budget, and when let go. */
#include <errno.h>
#include <stdlib.h>

#include "autoprotect.h"
#include "psi.h"
#include "test.h"
#include "util.h"

#define SEC 1000000ULL
#define MB (1ULL << 20)

/* Costs by unit name: "a" 10 MB etc., looked up from a table. */
struct costs {
	const char *key[8];
	uint64_t bytes[8];
	unsigned asked;
};

static uint64_t cost_of(void *userdata, const char *key)
{
	struct costs *c = userdata;

	c->asked++;
	for (size_t i = 0; i < 8 && c->key[i]; i++)
		if (streq(c->key[i], key))
			return c->bytes[i];
	return 1 * MB;
}

static const struct autoprotect_config config = {
	.fault_rate = 10,
	.pressure_some = 5,
	.window_usec = 10 * SEC,
	.calm_usec = 60 * SEC,
	.budget = 100 * MB,
};

static struct autoprotect *new_engine(const struct autoprotect_config *c)
{
	struct autoprotect *ap = NULL;

	CHECK_EQ_INT(autoprotect_new(c, &ap), 0);
	return ap;
}

static const struct autoprotect_decision *decide(struct autoprotect *ap, uint64_t now, double psi,
						 const struct autoprotect_explicit *ex, size_t n_ex,
						 struct costs *c, size_t *n)
{
	const struct autoprotect_decision *d = NULL;

	CHECK_EQ_INT(autoprotect_decide(ap, now, psi, ex, n_ex, cost_of, c, &d, n), 0);
	return d;
}

/* Feed unit key a steady rate of faults/s from t0 to t1 every 2 s. */
static void feed(struct autoprotect *ap, const char *key, uint64_t *faults, double rate, uint64_t t0, uint64_t t1,
		 double unit_psi)
{
	for (uint64_t t = t0; t <= t1; t += 2 * SEC) {
		autoprotect_sample(ap, key, *faults, t, unit_psi);
		*faults += (uint64_t)(rate * 2);
	}
}

/* Watch key and feed it rate faults/s over the first window (0..10 s). */
static void watch_and_feed(struct autoprotect *ap, const char *key, uint64_t *faults, double rate)
{
	autoprotect_watch(ap, key);
	feed(ap, key, faults, rate, 0, 10 * SEC, -1);
}

static void test_suffering_unit_protected(void)
{
	struct autoprotect *ap = new_engine(&config);
	struct costs c = { 0 };
	const struct autoprotect_decision *d;
	struct autoprotect_status s;
	uint64_t fa = 0, fb = 0;
	size_t n;
	char buf[256];

	CHECK_EQ_INT(autoprotect_watch(ap, "a.service"), 1);
	CHECK_EQ_INT(autoprotect_watch(ap, "a.service"), 0);
	CHECK_EQ_INT(autoprotect_watch(ap, "b.service"), 1);
	CHECK_EQ_INT(autoprotect_n_watched(ap), 2);

	/* One sample: no rate yet, nothing decided. */
	autoprotect_sample(ap, "a.service", 0, 1 * SEC, -1);
	d = decide(ap, 1 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 0);
	CHECK_EQ_INT(autoprotect_get(ap, "a.service", &s), 0);
	CHECK(!s.have_rate);
	autoprotect_format(&s, "", buf, sizeof(buf));
	CHECK_STREQ(buf, "auto: watched, not protected (no rate yet)");

	/* Less than half the window: a spike, not a rate. */
	autoprotect_sample(ap, "a.service", 1000, 3 * SEC, -1);
	d = decide(ap, 3 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 0);

	/* a takes 50 faults/s, b 2/s, both under PSI 20%: only a. */
	fa = 1000;
	feed(ap, "a.service", &fa, 50, 5 * SEC, 15 * SEC, -1);
	feed(ap, "b.service", &fb, 2, 1 * SEC, 15 * SEC, -1);
	d = decide(ap, 15 * SEC, 20, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 1);
	CHECK_STREQ(d[0].key, "a.service");
	CHECK_EQ_INT(d[0].action, AUTOPROTECT_PROTECT);
	CHECK(d[0].rate >= 49 && d[0].rate <= 51);
	CHECK(d[0].pressure_some == 20);
	CHECK_EQ_INT(d[0].span_usec, 10 * SEC);
	CHECK_EQ_INT(d[0].cost, 1 * MB);
	CHECK_EQ_INT(d[0].budget_left, 100 * MB);
	CHECK(autoprotect_is_protected(ap, "a.service"));
	CHECK(!autoprotect_is_protected(ap, "b.service"));
	CHECK_EQ_INT(autoprotect_get(ap, "a.service", &s), 0);
	CHECK(s.protected_now);
	CHECK_EQ_INT(s.since_usec, 15 * SEC);
	autoprotect_format(&s, "12:00:00", buf, sizeof(buf));
	CHECK_STREQ(buf, "auto: protected since 12:00:00, 50 text faults/s under PSI some 20.0%");
	CHECK_EQ_INT(autoprotect_get(ap, "b.service", &s), 0);
	autoprotect_format(&s, "", buf, sizeof(buf));
	CHECK_STREQ(buf, "auto: watched, not protected (2 text faults/s, PSI some 20.0%)");
	CHECK_EQ_INT(autoprotect_get(ap, "c.service", &s), -ENOENT);

	/* Protected once: the next round says nothing new. */
	feed(ap, "a.service", &fa, 50, 17 * SEC, 17 * SEC, -1);
	d = decide(ap, 17 * SEC, 20, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 0);
	autoprotect_free(ap);
}

static void test_pressure_needed(void)
{
	struct autoprotect *ap = new_engine(&config);
	struct autoprotect_config faults_alone = config;
	struct costs c = { 0 };
	const struct autoprotect_decision *d;
	uint64_t f = 0;
	size_t n;

	watch_and_feed(ap, "a.service", &f, 100);
	/* Faults without pressure (a unit starting, say): not suffering. */
	d = decide(ap, 10 * SEC, 1.0, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 0);
	/* The unit's own memory.pressure counts too. */
	feed(ap, "a.service", &f, 100, 12 * SEC, 12 * SEC, 30.0);
	d = decide(ap, 12 * SEC, 1.0, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 1);
	CHECK(d[0].pressure_some == 30.0);
	autoprotect_free(ap);

	/* AutoPressureSome=0: faults alone. */
	faults_alone.pressure_some = 0;
	ap = new_engine(&faults_alone);
	f = 0;
	watch_and_feed(ap, "a.service", &f, 100);
	d = decide(ap, 10 * SEC, 0, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(d[0].action, AUTOPROTECT_PROTECT);
	autoprotect_free(ap);
}

static void test_budget_most_suffering_first(void)
{
	struct autoprotect *ap = new_engine(&config);
	/* 100 MB budget; an explicit unit takes 40: 60 left. */
	struct costs c = {
		.key = { "low.service", "mid.service", "high.service", "small.service" },
		.bytes = { 30 * MB, 30 * MB, 50 * MB, 5 * MB },
	};
	struct autoprotect_explicit ex[] = { { "db.service", 40 * MB } };
	const struct autoprotect_decision *d;
	static const double rate[] = { 20, 40, 80, 11 }; /* faults/s, in c's order */
	uint64_t f[4] = { 0 };
	size_t n;

	for (size_t i = 0; i < 4; i++)
		watch_and_feed(ap, c.key[i], &f[i], rate[i]);
	d = decide(ap, 10 * SEC, 25, ex, 1, &c, &n);
	/* high (50 of 60) fits; mid and low (30 each) do not; small (5) does. */
	CHECK_EQ_INT(n, 4);
	CHECK_STREQ(d[0].key, "high.service");
	CHECK_EQ_INT(d[0].action, AUTOPROTECT_PROTECT);
	CHECK_EQ_INT(d[0].budget_left, 60 * MB);
	CHECK_STREQ(d[1].key, "mid.service");
	CHECK_EQ_INT(d[1].action, AUTOPROTECT_OVER_BUDGET);
	CHECK_EQ_INT(d[1].budget_left, 10 * MB);
	CHECK_STREQ(d[2].key, "low.service");
	CHECK_EQ_INT(d[2].action, AUTOPROTECT_OVER_BUDGET);
	CHECK_STREQ(d[3].key, "small.service");
	CHECK_EQ_INT(d[3].action, AUTOPROTECT_PROTECT);
	CHECK_EQ_INT(d[3].budget_left, 10 * MB);
	CHECK(autoprotect_is_protected(ap, "high.service"));
	CHECK(!autoprotect_is_protected(ap, "mid.service"));

	/* Over budget is said once per episode, not every round. */
	for (size_t i = 0; i < 4; i++)
		feed(ap, c.key[i], &f[i], rate[i], 12 * SEC, 12 * SEC, -1);
	d = decide(ap, 12 * SEC, 25, ex, 1, &c, &n);
	CHECK_EQ_INT(n, 0);

	/* The explicit unit grows: an auto-protected unit is never the
	 * reason it is pushed out; the auto ones keep what they have, and
	 * nothing new is admitted (the budget is spent). */
	ex[0].cost = 90 * MB;
	feed(ap, "mid.service", &f[1], rate[1], 14 * SEC, 14 * SEC, -1);
	d = decide(ap, 14 * SEC, 25, ex, 1, &c, &n);
	CHECK_EQ_INT(n, 0);
	autoprotect_free(ap);
}

static void test_explicit_never_decided(void)
{
	struct autoprotect *ap = new_engine(&config);
	struct costs c = { 0 };
	struct autoprotect_explicit ex[] = { { "a.service", 1 * MB } };
	const struct autoprotect_decision *d;
	uint64_t f = 0;
	size_t n;

	watch_and_feed(ap, "a.service", &f, 100);
	d = decide(ap, 10 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 1);
	CHECK(autoprotect_is_protected(ap, "a.service"));
	/* An explicit rule takes it over (reload): not ours any more, and
	 * never released by the calm rule. */
	d = decide(ap, 200 * SEC, 0, ex, 1, &c, &n);
	CHECK_EQ_INT(n, 0);
	CHECK(!autoprotect_is_protected(ap, "a.service"));
	(void)d;
	autoprotect_free(ap);
}

static void test_calm_release(void)
{
	struct autoprotect *ap = new_engine(&config);
	struct autoprotect_config never = config;
	struct costs c = { 0 };
	const struct autoprotect_decision *d;
	uint64_t f = 0;
	size_t n;

	watch_and_feed(ap, "a.service", &f, 100);
	d = decide(ap, 10 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 1);
	/* Calm (no faults) from 12 s on; suffering last seen at 10 s... but
	 * the window still holds the faults until 20 s. */
	for (uint64_t t = 12 * SEC; t < 70 * SEC; t += 2 * SEC) {
		autoprotect_sample(ap, "a.service", f, t, -1);
		d = decide(ap, t, 50, NULL, 0, &c, &n);
		CHECK_EQ_INT(n, 0);
	}
	/* 60 s after the last suffering round (at 20 s: the window still
	 * held faults then) it is let go. */
	for (uint64_t t = 70 * SEC; t <= 80 * SEC && n == 0; t += 2 * SEC) {
		autoprotect_sample(ap, "a.service", f, t, -1);
		d = decide(ap, t, 50, NULL, 0, &c, &n);
	}
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(d[0].action, AUTOPROTECT_RELEASE);
	CHECK(d[0].rate == 0);
	CHECK(!autoprotect_is_protected(ap, "a.service"));
	autoprotect_free(ap);

	/* AutoCalmSec=0: kept until the daemon stops. */
	never.calm_usec = 0;
	ap = new_engine(&never);
	f = 0;
	watch_and_feed(ap, "a.service", &f, 100);
	d = decide(ap, 10 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 1);
	for (uint64_t t = 12 * SEC; t < 100000 * SEC; t += 1000 * SEC) {
		autoprotect_sample(ap, "a.service", f, t, -1);
		d = decide(ap, t, 0, NULL, 0, &c, &n);
		CHECK_EQ_INT(n, 0);
	}
	CHECK(autoprotect_is_protected(ap, "a.service"));
	autoprotect_free(ap);
}

static void test_counter_and_forget(void)
{
	struct autoprotect *ap = new_engine(&config);
	struct costs c = { 0 };
	const struct autoprotect_decision *d;
	size_t n;

	autoprotect_watch(ap, "a.service");
	/* A counter that went back (cgroup made anew) restarts the history:
	 * no negative or huge rate. */
	autoprotect_sample(ap, "a.service", 100000, 0, -1);
	autoprotect_sample(ap, "a.service", 5, 10 * SEC, -1);
	d = decide(ap, 10 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 0);
	/* The same time twice: ignored. */
	autoprotect_sample(ap, "a.service", 100000, 10 * SEC, -1);
	autoprotect_sample(ap, "a.service", 5, 16 * SEC, -1);
	d = decide(ap, 16 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 0);
	/* Unknown units are ignored; forgotten ones are gone. */
	autoprotect_sample(ap, "x.service", 1, 1, -1);
	CHECK(!autoprotect_watched(ap, "x.service"));
	autoprotect_forget(ap, "a.service");
	CHECK(!autoprotect_watched(ap, "a.service"));
	CHECK_EQ_INT(autoprotect_n_watched(ap), 0);
	(void)d;
	autoprotect_free(ap);
}

static void test_nothing_to_protect(void)
{
	struct autoprotect *ap = new_engine(&config);
	struct costs c = { .key = { "gone.service" }, .bytes = { 0 } };
	const struct autoprotect_decision *d;
	uint64_t f = 0;
	size_t n;

	/* It suffered, then its processes exited (the cgroup stays): no
	 * protection of nothing, and no "over budget" either. */
	watch_and_feed(ap, "gone.service", &f, 100);
	d = decide(ap, 10 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 0);
	CHECK(!autoprotect_is_protected(ap, "gone.service"));
	/* A process again: protected. */
	c.bytes[0] = 1 * MB;
	feed(ap, "gone.service", &f, 100, 12 * SEC, 12 * SEC, -1);
	d = decide(ap, 12 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 1);
	CHECK_EQ_INT(d[0].action, AUTOPROTECT_PROTECT);
	autoprotect_free(ap);
}

static void test_many_samples(void)
{
	struct autoprotect_config c1 = config;
	struct autoprotect *ap;
	struct costs c = { 0 };
	const struct autoprotect_decision *d;
	uint64_t f = 0;
	size_t n;

	/* More samples in a window than are kept: the rate is still right. */
	c1.window_usec = 1000 * SEC;
	ap = new_engine(&c1);
	autoprotect_watch(ap, "a.service");
	for (uint64_t t = 0; t <= 1000 * SEC; t += 2 * SEC, f += 40)
		autoprotect_sample(ap, "a.service", f, t, -1);
	d = decide(ap, 1000 * SEC, 50, NULL, 0, &c, &n);
	CHECK_EQ_INT(n, 1);
	CHECK(d[0].rate > 19.9 && d[0].rate < 20.1);
	autoprotect_free(ap);
	CHECK(autoprotect_free(NULL) == NULL);
	CHECK_STREQ(autoprotect_action_to_string(AUTOPROTECT_OVER_BUDGET), "over-budget");
}

static void test_psi_parse(void)
{
	static const char text[] = "some avg10=12.34 avg60=5.00 avg300=1.00 total=123456\n"
				   "full avg10=3.21 avg60=1.00 avg300=0.50 total=6543\n";
	double v = -1;

	CHECK_EQ_INT(psi_parse_avg10(text, strlen(text), PSI_SOME, &v), 0);
	CHECK(v > 12.33 && v < 12.35);
	CHECK_EQ_INT(psi_parse_avg10(text, strlen(text), PSI_FULL, &v), 0);
	CHECK(v > 3.20 && v < 3.22);
	/* Without "full" (a kernel before 5.13's cgroup files, CPU). */
	CHECK_EQ_INT(psi_parse_avg10(text, 53, PSI_FULL, &v), -EINVAL);
	/* Not a plain number, out of range, cut short, empty. */
	CHECK_EQ_INT(psi_parse_avg10("some avg10=inf avg60=0\n", 23, PSI_SOME, &v), -EINVAL);
	CHECK_EQ_INT(psi_parse_avg10("some avg10=0x10 avg60=0\n", 24, PSI_SOME, &v), -EINVAL);
	CHECK_EQ_INT(psi_parse_avg10("some avg10=100.01 avg60=0\n", 26, PSI_SOME, &v), -EINVAL);
	CHECK_EQ_INT(psi_parse_avg10("some avg10=", 11, PSI_SOME, &v), -EINVAL);
	CHECK_EQ_INT(psi_parse_avg10("", 0, PSI_SOME, &v), -EINVAL);
	/* The last line without a newline. */
	CHECK_EQ_INT(psi_parse_avg10("some avg10=7.5", 14, PSI_SOME, &v), 0);
	CHECK(v == 7.5);
}

TEST_MAIN(test_psi_parse, test_suffering_unit_protected, test_pressure_needed, test_budget_most_suffering_first,
	  test_explicit_never_decided, test_calm_release, test_counter_and_forget, test_nothing_to_protect, test_many_samples)
