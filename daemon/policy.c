/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <ini.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "ini-lines.h"
#include "policy.h"
#include "util.h"

/* inih hands a line of at most INI_MAX_LINE - 1 bytes to its parser; the
 * reader below keeps longer lines from being split silently. */
#define LINE_MAX_BYTES (INI_MAX_LINE - 2)
/* A list key's line may be longer: the reader hands it to inih as several
 * assignments of the same key, which append (see read_line()). */
#define LIST_LINE_MAX_BYTES 16384
#define MAX_GLOBS 1024

static bool is_list_key(const char *name, size_t len);

static const char *const backend_names[] = {
	[BACKEND_AUTO] = "auto",
	[BACKEND_KERNEL] = "kernel",
	[BACKEND_LOCK] = "lock",
	[BACKEND_NONE] = "none",
};

const char *backend_choice_to_string(enum backend_choice b)
{
	return (size_t)b < ELEMENTSOF(backend_names) ? backend_names[b] : "invalid";
}

int backend_choice_from_string(const char *s)
{
	for (size_t i = 0; i < ELEMENTSOF(backend_names); i++)
		if (streq(s, backend_names[i]))
			return (int)i;
	return -EINVAL;
}

uint64_t budget_resolve(const struct budget *b, uint64_t mem_total)
{
	if (!b->set)
		return UINT64_MAX;
	if (b->percent)
		return mem_total / 100 * b->percent;
	return b->bytes;
}

static int parse_budget(const char *s, struct budget *ret)
{
	char *end;
	unsigned long long v;

	if (!*s || *s == '-')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -EINVAL;
	if (*end == '%' && end[1] == '\0') {
		if (v < 1 || v > 100)
			return -ERANGE;
		*ret = (struct budget){ .percent = (unsigned)v, .set = true };
		return 0;
	}
	unsigned shift = 0;
	switch (*end) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		return -EINVAL;
	}
	if (*end && end[1] != '\0')
		return -EINVAL;
	if (shift && v > (UINT64_MAX >> shift))
		return -ERANGE;
	*ret = (struct budget){ .bytes = (uint64_t)v << shift, .set = true };
	return 0;
}

/* Bytes of at least a page (the kernel refuses less, but 0), or "max". */
static int parse_exec_protect_limit(const char *s, uint64_t *ret)
{
	struct budget b;
	int r;

	if (streq(s, "max") || streq(s, "infinity")) {
		*ret = EXEC_PROTECT_LIMIT_MAX;
		return 0;
	}
	r = parse_budget(s, &b);
	if (r < 0)
		return r;
	if (b.percent || b.bytes < 4096)
		return -ERANGE;
	*ret = b.bytes;
	return 0;
}

static int parse_uint(const char *s, unsigned min, unsigned max, unsigned *ret)
{
	char *end;
	unsigned long v;

	if (!*s || *s == '-' || *s == '+')
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || *end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*ret = (unsigned)v;
	return 0;
}

/* Appends a formatted message for FILE:LINE to a list of errors or warnings. */
static int add_message(struct policy_error **list, size_t *n_list, const char *file, unsigned line,
		       const char *fmt, va_list ap)
{
	struct policy_error *n;
	char *msg;

	if (vasprintf(&msg, fmt, ap) < 0)
		return -ENOMEM;
	n = realloc(*list, (*n_list + 1) * sizeof(*n));
	if (!n) {
		free(msg);
		return -ENOMEM;
	}
	*list = n;
	n[(*n_list)++] = (struct policy_error){
		.file = strdup(file),
		.line = line,
		.message = msg,
	};
	return 0;
}

int policy_add_error(struct policy *p, const char *file, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = add_message(&p->errors, &p->n_errors, file, line, fmt, ap);
	va_end(ap);
	return r;
}

int policy_add_warning(struct policy *p, const char *file, unsigned line, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = add_message(&p->warnings, &p->n_warnings, file, line, fmt, ap);
	va_end(ap);
	return r;
}

static int strv_push(char ***v, size_t *n, const char *s)
{
	char **nv = realloc(*v, (*n + 1) * sizeof(char *));

	if (!nv)
		return -ENOMEM;
	*v = nv;
	nv[*n] = strdup(s);
	if (!nv[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static void strv_free(char **v)
{
	if (!v)
		return;
	for (char **i = v; *i; i++)
		free(*i);
	free(v);
}

/* Split on white space into a NULL terminated list. */
/* Append the space-separated globs of value to *list; an empty value
 * empties it. */
static int append_globs(const char *value, char ***list)
{
	size_t n = 0, add = 0;
	const char *p;
	char **v;

	if (!value[strspn(value, " \t")]) {
		strv_free(*list);
		*list = NULL;
		return 0;
	}
	for (p = value; *(p += strspn(p, " \t")); p += strcspn(p, " \t"))
		add++;
	while (*list && (*list)[n])
		n++;
	if (n + add > MAX_GLOBS)
		return -E2BIG;
	v = realloc(*list, (n + add + 1) * sizeof(char *));
	if (!v)
		return -ENOMEM;
	*list = v;
	for (p = value; *(p += strspn(p, " \t"));) {
		size_t l = strcspn(p, " \t");

		v[n] = strndup(p, l);
		if (!v[n])
			return -ENOMEM;
		v[++n] = NULL;
		p += l;
	}
	return 0;
}

void policy_init(struct policy *p)
{
	*p = (struct policy){
		.daemon = {
			.backend = BACKEND_AUTO,
			.rescan_delays_ms = { 20, 200, 1000 },
			.n_rescan_delays = 3,
			.receive_buffer = 4 << 20,
			.exec_batch_ms = 2,
			.lock_budget = { .percent = 5, .set = true },
			.lock_recheck_sec = 10,
			.lock_keep_sec = 600,
			.pressure_stall_ms = 100,
			.pressure_window_ms = 1000,
			.pressure_recover_sec = 30,
			.pressure_reserve = { .percent = 1, .set = true },
			.prewarm_budget = { .bytes = 128ULL << 20, .set = true },
			.prewarm_record_sec = 300,
			.auto_fault_rate = 2,
			.auto_pressure_some = 5,
			.auto_window_sec = 30,
			.auto_interval_sec = 5,
			.auto_calm_sec = 600,
			.container_annotations = 1,
			.container_protect_max = EXEC_PROTECT_LIMIT_MAX,
		},
	};
}

static void rule_done(struct rule *r)
{
	free(r->name);
	free(r->file);
	strv_free(r->match_unit);
	strv_free(r->match_cgroup);
	strv_free(r->match_exe);
}

void policy_done(struct policy *p)
{
	for (size_t i = 0; i < p->n_rules; i++)
		rule_done(&p->rules[i]);
	free(p->rules);
	for (size_t i = 0; i < p->n_files; i++)
		free(p->files[i]);
	free(p->files);
	for (size_t i = 0; i < p->n_errors; i++) {
		free(p->errors[i].file);
		free(p->errors[i].message);
	}
	free(p->errors);
	for (size_t i = 0; i < p->n_warnings; i++) {
		free(p->warnings[i].file);
		free(p->warnings[i].message);
	}
	free(p->warnings);
	for (size_t i = 0; i < p->n_masked; i++)
		free(p->masked[i]);
	free(p->masked);
	*p = (struct policy){ 0 };
}

enum section_kind {
	SECTION_NONE,	  /* before any section header */
	SECTION_DAEMON,
	SECTION_RULE,
	SECTION_UNIT,	  /* [X-ExecGuard] in a unit file */
	SECTION_FOREIGN,  /* a systemd section of a unit file: ignored */
	SECTION_INVALID,  /* already reported */
};

/* State shared by the line reader and the inih handler: the reader
 * knows line numbers, which the stock inih handler does not get. */
struct parse_state {
	struct policy *p;
	const char *file;
	struct ini_cursor cur;
	unsigned line;
	bool unit_mode;
	enum section_kind section;
	struct rule *rule;		/* for SECTION_RULE */
	struct rule_settings *unit;	/* for SECTION_UNIT */
	char seen[32][48];		/* keys seen in this section */
	unsigned seen_line[32];
	size_t n_seen;
	int error;			/* -ENOMEM */
	unsigned pressure_line;		/* last Pressure{Stall,Window}MSec= here */
	unsigned auto_line;		/* last Auto{Interval,Window}Sec= here */
	/* The rest of an overlong list-key line, still to hand to inih. */
	char cont_key[32];
	const char *cont_pos, *cont_end;
};

static void section_reset(struct parse_state *st, enum section_kind k)
{
	st->section = k;
	st->n_seen = 0;
	st->rule = NULL;
}

static int start_rule(struct parse_state *st, const char *name)
{
	struct policy *p = st->p;
	struct rule *n;

	for (size_t i = 0; i < p->n_rules; i++)
		if (streq(p->rules[i].name, name))
			return policy_add_error(p, st->file, st->line,
						"duplicate rule [Rule %s]; first defined at %s:%u",
						name, p->rules[i].file, p->rules[i].line) ?: 1;
	n = realloc(p->rules, (p->n_rules + 1) * sizeof(*n));
	if (!n)
		return -ENOMEM;
	p->rules = n;
	st->rule = &p->rules[p->n_rules++];
	*st->rule = (struct rule){
		.name = strdup(name),
		.file = strdup(st->file),
		.line = st->line,
		.settings = { .protect = -1 },
	};
	if (!st->rule->name || !st->rule->file)
		return -ENOMEM;
	return 0;
}

/* Look at a section header line; tells inih nothing it would not see. */
static int handle_section_header(struct parse_state *st, const struct ini_line *il)
{
	char name[INI_MAX_LINE];

	if (il->unclosed || il->trailing) {
		section_reset(st, SECTION_INVALID);
		/* systemd's sections are systemd's business; ours is not. */
		if (st->unit_mode && (il->name_len < 11 || memcmp(il->name, "X-ExecGuard", 11) != 0))
			return 0;
		return policy_add_error(st->p, st->file, st->line,
					il->unclosed ? "section header without closing ']'" :
						       "text after ']' in a section header (a comment needs a blank before its '#')");
	}
	if (il->name_len >= sizeof(name) || il->len > LINE_MAX_BYTES) {
		section_reset(st, SECTION_INVALID);
		if (st->unit_mode)
			return 0;
		return policy_add_error(st->p, st->file, st->line,
					"line too long (%zu bytes; at most %d)", il->len, LINE_MAX_BYTES);
	}
	memcpy(name, il->name, il->name_len);
	name[il->name_len] = '\0';

	if (st->unit_mode) {
		section_reset(st, streq(name, "X-ExecGuard") ? SECTION_UNIT : SECTION_FOREIGN);
		return 0;
	}
	if (streq(name, "Daemon")) {
		section_reset(st, SECTION_DAEMON);
		return 0;
	}
	if (strncmp(name, "Rule ", 5) == 0 && name[5] && !strchr(name + 5, ' ')) {
		int r;

		section_reset(st, SECTION_RULE);
		r = start_rule(st, name + 5);
		if (r != 0)
			section_reset(st, SECTION_INVALID);
		return r < 0 ? r : 0;
	}
	section_reset(st, SECTION_INVALID);
	return policy_add_error(st->p, st->file, st->line,
				"unknown section [%s]; expected [Daemon] or [Rule NAME] (NAME without spaces)",
				name);
}

/* The next piece of an overlong list-key line as "KEY=WORDS\n": whole
 * words, as many as fit in what inih takes (num). NULL when the line is
 * done; an empty line when a single word cannot fit (reported). */
static char *next_piece(struct parse_state *st, char *str, int num)
{
	size_t klen = strlen(st->cont_key), room, used = 0;
	const char *p = st->cont_pos;

	while (p < st->cont_end && (*p == ' ' || *p == '\t'))
		p++;
	if (p >= st->cont_end) {
		st->cont_pos = NULL;
		return NULL;
	}
	/* KEY=, the words, "\n" and the NUL must fit in num bytes. */
	room = (size_t)num - klen - 3;
	/* used: up to the end of the last whole word that fits; scan: where
	 * the next word starts. */
	for (size_t scan = 0; p + scan < st->cont_end;) {
		size_t wlen = 0;

		while (p + scan + wlen < st->cont_end && p[scan + wlen] != ' ' && p[scan + wlen] != '\t')
			wlen++;
		if (scan + wlen > room)
			break;
		used = scan + wlen;
		scan = used;
		while (p + scan < st->cont_end && (p[scan] == ' ' || p[scan] == '\t'))
			scan++;
	}
	if (used == 0) {
		size_t wlen = 0;

		while (p + wlen < st->cont_end && p[wlen] != ' ' && p[wlen] != '\t')
			wlen++;

		st->cont_pos = NULL;
		st->error = policy_add_error(st->p, st->file, st->line,
					     "a pattern of %zu bytes in %s=; at most %zu in one pattern",
					     wlen, st->cont_key, room);
		str[0] = '\n';
		str[1] = '\0';
		return str;
	}
	memcpy(str, st->cont_key, klen);
	str[klen] = '=';
	memcpy(str + klen + 1, p, used);
	str[klen + 1 + used] = '\n';
	str[klen + 2 + used] = '\0';
	st->cont_pos = p + used;
	return str;
}

/* An overlong line that is "LISTKEY = VALUE" in a rule: remember its
 * value, to be handed over in pieces by next_piece(). */
static bool start_pieces(struct parse_state *st, const char *l, size_t len)
{
	const char *eq = memchr(l, '=', len);
	size_t klen;

	if (st->section != SECTION_RULE || len > LIST_LINE_MAX_BYTES || !eq)
		return false;
	klen = (size_t)(eq - l);
	while (klen && (l[klen - 1] == ' ' || l[klen - 1] == '\t'))
		klen--;
	if (!is_list_key(l, klen) || klen >= sizeof(st->cont_key))
		return false;
	memcpy(st->cont_key, l, klen);
	st->cont_key[klen] = '\0';
	st->cont_pos = eq + 1;
	st->cont_end = l + len;
	return true;
}

/* Whether the line is not UTF-8 or holds a byte order mark (then
 * reported). Names are bytes to the kernel, but a policy is text: a
 * name with other bytes is matched with ? or *. */
static bool bad_text(struct parse_state *st, const struct ini_line *il)
{
	size_t bad = utf8_invalid_at(il->text, il->len);
	const char *bom;

	if (bad != il->len) {
		st->error = policy_add_error(st->p, st->file, st->line,
					     "not valid UTF-8 (byte \\x%02x at column %zu); match a name with such bytes with ? or *",
					     (unsigned char)il->text[bad], (size_t)(il->text - il->raw) + bad + 1);
		return true;
	}
	/* U+FEFF is valid UTF-8, but not where a name or key is: say what it
	 * is rather than letting it make an unknown key or a name that never
	 * matches (an editor's, or two files concatenated). */
	bom = memmem(il->text, il->len, "\xef\xbb\xbf", 3);
	if (!bom)
		return false;
	st->error = policy_add_error(st->p, st->file, st->line,
				     "a UTF-8 byte order mark (U+FEFF) at column %zu; one is allowed only as the first bytes of a file",
				     (size_t)(bom - il->raw) + 1);
	return true;
}

/* inih line reader over a memory buffer: ini_next_line() splits and
 * classifies the lines (white space and inline comments removed, so
 * inih never joins continuation lines); this counts them, refuses NUL
 * bytes, text that is not UTF-8, overlong lines and lines that are not
 * KEY=VALUE, and hides systemd's own sections of a unit file. Debian's
 * libinih takes lines of at most 199 bytes (INI_MAX_LINE 200): a longer
 * list-key line goes to it as several assignments of the same key,
 * which append, all with the line number of the one line. */
static char *read_line(char *str, int num, void *stream)
{
	struct parse_state *st = stream;
	struct ini_line il;
	const char *l;
	size_t len;
	bool pass = true;

	if (st->error)
		return NULL;
	if (st->cont_pos) {
		char *piece = next_piece(st, str, num);

		if (piece)
			return piece;
	}
	if (!ini_next_line(&st->cur, &il))
		return NULL;
	st->line = il.number;
	l = il.text;
	len = il.len;

	if (il.kind == INI_BLANK || il.kind == INI_COMMENT) {
		pass = false;
	} else if (memchr(l, '\0', len)) {
		pass = false;
		if (!st->unit_mode || st->section == SECTION_UNIT)
			st->error = policy_add_error(st->p, st->file, st->line, "NUL byte in line");
	} else if (il.kind == INI_SECTION) {
		if (!st->unit_mode && bad_text(st, &il)) {
			section_reset(st, SECTION_INVALID);
			pass = false;
		} else {
			st->error = handle_section_header(st, &il);
			pass = st->section != SECTION_INVALID && len < (size_t)num - 1;
		}
	} else if (st->unit_mode && st->section != SECTION_UNIT) {
		pass = false;
	} else if (bad_text(st, &il)) {
		pass = false;
		/* "\xef\xbb\xbf[Daemon]" (two files concatenated): a header all
		 * the same, bad, so that its keys do not cascade into errors. */
		if (len > 3 && !memcmp(l, "\xef\xbb\xbf[", 4))
			section_reset(st, SECTION_INVALID);
	} else if ((len > LINE_MAX_BYTES || len >= (size_t)num - 1) && start_pieces(st, l, len)) {
		char *piece = next_piece(st, str, num);

		if (piece)
			return piece;
		pass = false; /* "KEY=" and blanks only: cannot be long */
	} else if (len > LINE_MAX_BYTES || len >= (size_t)num - 1) {
		pass = false;
		st->error = policy_add_error(st->p, st->file, st->line,
					     "line too long (%zu bytes; at most %d, or %d for MatchUnit=, MatchCgroup= and MatchExe=)",
					     len, LINE_MAX_BYTES, LIST_LINE_MAX_BYTES);
	} else if (il.kind != INI_ASSIGNMENT || il.name_len == 0 || memchr(il.name, ':', il.name_len)) {
		pass = false;
		st->error = policy_add_error(st->p, st->file, st->line, "expected KEY=VALUE");
	} else if (st->section == SECTION_NONE) {
		pass = false;
		st->error = policy_add_error(st->p, st->file, st->line,
					     "key outside of a section; expected [Daemon] or [Rule NAME] first");
	} else if (st->section == SECTION_INVALID) {
		pass = false; /* the header was reported */
	}

	if (!pass) {
		str[0] = '\n';
		str[1] = '\0';
		return str;
	}
	memcpy(str, l, len);
	str[len] = '\n';
	str[len + 1] = '\0';
	return str;
}

static int note_key(struct parse_state *st, const char *name)
{
	for (size_t i = 0; i < st->n_seen; i++)
		if (streq(st->seen[i], name))
			return policy_add_error(st->p, st->file, st->line,
						"duplicate key %s (first set at line %u)", name,
						st->seen_line[i]) ?: 1;
	if (st->n_seen < ELEMENTSOF(st->seen) && strlen(name) < sizeof(st->seen[0])) {
		strcpy(st->seen[st->n_seen], name);
		st->seen_line[st->n_seen++] = st->line;
	}
	return 0;
}

#define BAD_VALUE(st, name, value, expected)                                          \
	policy_add_error((st)->p, (st)->file, (st)->line, "invalid %s=%s; expected %s", \
			 name, value, expected)

static int parse_rescan_delays(const char *value, struct daemon_settings *d)
{
	char buf[INI_MAX_LINE];
	unsigned delays[ELEMENTSOF(d->rescan_delays_ms)] = { 0 };
	size_t n = 0;
	char *save = NULL;

	snprintf(buf, sizeof(buf), "%s", value);
	for (char *tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
		if (n == ELEMENTSOF(delays))
			return -E2BIG;
		if (parse_uint(tok, 1, 600000, &delays[n]) < 0)
			return -EINVAL;
		if (n > 0 && delays[n] <= delays[n - 1])
			return -EINVAL;
		n++;
	}
	memcpy(d->rescan_delays_ms, delays, sizeof(delays));
	d->n_rescan_delays = n;
	return 0;
}

/* Every key, in one table: where it is accepted, how its value is read,
 * and the words for a bad value. The parser, "check-config --list-keys"
 * and the docs test all use it. */

enum key_kind {
	KEY_UINT,	     /* unsigned in [min, max] */
	KEY_INT,	     /* the same, stored in an int */
	KEY_BUDGET,	     /* bytes (K/M/G/T) or a percentage */
	KEY_LIMIT,	     /* bytes (K/M/G/T) or "max", in a uint64_t */
	KEY_BOOLEAN,	     /* yes/no, stored in an int (-1 unset) */
	KEY_PROTECT,	     /* yes/no/auto, stored in an int (-1 unset, PROTECT_AUTO) */
	KEY_TRISTATE,	     /* yes/no, stored in an int as PREWARM_YES/NO (0 unset) */
	KEY_BACKEND,	     /* enum backend_choice */
	KEY_DELAYS,	     /* rising millisecond delays */
	KEY_GLOBS,	     /* Match*: globs, repeated assignments append */
};

enum { IN_DAEMON = 1, IN_RULE = 2, IN_UNIT = 4 };

struct policy_key {
	const char *name;
	unsigned sections;
	enum key_kind kind;
	size_t offset; /* into daemon_settings, rule_settings or rule */
	unsigned min, max;
	const char *expected; /* "invalid KEY=VALUE; expected ..." */
	const char *help;
};

#define D(f) offsetof(struct daemon_settings, f)
#define S(f) offsetof(struct rule_settings, f)
#define R(f) offsetof(struct rule, f)
static const struct policy_key keys[] = {
	{ "Backend", IN_DAEMON, KEY_BACKEND, D(backend), 0, 0, "auto, kernel, lock or none",
	  "how to protect: the kernel's memory.exec_protect, page locking, or observe only" },
	{ "RescanDelaysMSec", IN_DAEMON, KEY_DELAYS, 0, 1, 600000,
	  "up to 8 rising delays in milliseconds (1..600000), e.g. 20 200 1000",
	  "when a new process is looked at again after its exec (libraries mapped by then)" },
	{ "ReceiveBufferBytes", IN_DAEMON, KEY_INT, D(receive_buffer), 65536, 1U << 30,
	  "bytes from 65536 to 1073741824", "the proc connector socket's receive buffer" },
	{ "ExecBatchMSec", IN_DAEMON, KEY_UINT, D(exec_batch_ms), 0, 1000,
	  "milliseconds from 0 (at once) to 1000", "exec events gathered this long and looked at in one go" },
	{ "LockBudget", IN_DAEMON, KEY_BUDGET, D(lock_budget), 0, 0,
	  "bytes (K, M, G, T suffix) or a percentage of RAM", "lock backend: all locked text together" },
	{ "LockRecheckSec", IN_DAEMON, KEY_UINT, D(lock_recheck_sec), 1, 3600, "seconds from 1 to 3600",
	  "protected processes are looked at again this often (later mappings, moves)" },
	{ "LockKeepSec", IN_DAEMON, KEY_UINT, D(lock_keep_sec), 0, 86400, "seconds from 0 (not kept) to 86400",
	  "lock backend: pages of a program a unit ran stay locked this long after its last process mapping it "
	  "exited (per-request helpers)" },
	{ "PressureStallMSec", IN_DAEMON, KEY_UINT, D(pressure_stall_ms), 1, 10000,
	  "milliseconds from 1 to 10000", "lock backend: PSI stall per window that starts the watch" },
	{ "PressureWindowMSec", IN_DAEMON, KEY_UINT, D(pressure_window_ms), 500, 10000,
	  "milliseconds from 500 to 10000", "lock backend: the PSI window" },
	{ "PressureRecoverSec", IN_DAEMON, KEY_UINT, D(pressure_recover_sec), 1, 86400,
	  "seconds from 1 to 86400", "lock backend: calm time before locking again after giving back" },
	{ "PressureReserve", IN_DAEMON, KEY_BUDGET, D(pressure_reserve), 0, 0,
	  "bytes (K, M, G, T suffix) or a percentage (of RAM, or of a cgroup's memory limit)",
	  "lock backend: give back only below this much memory left" },
	{ "PrewarmBudget", IN_DAEMON, KEY_BUDGET, D(prewarm_budget), 0, 0,
	  "bytes (K, M, G, T suffix) or a percentage of RAM", "prewarm: all units' replays together, per daemon start" },
	{ "PrewarmRecordSec", IN_DAEMON, KEY_UINT, D(prewarm_record_sec), 1, 86400, "seconds from 1 to 86400",
	  "prewarm: how often the hot text of running units is sampled and their records written" },
	{ "ContainerAnnotations", IN_DAEMON, KEY_BOOLEAN, D(container_annotations), 0, 0, "yes or no",
	  "containers: honour the io.execguard.protect annotation that execguard-oci-hook passes on" },
	{ "ContainerProtectMax", IN_DAEMON, KEY_LIMIT, D(container_protect_max), 0, 0,
	  "bytes from 4K (K, M, G, T suffix) or max",
	  "containers: the most an annotation gets (memory.exec_protect bound and lock budget)" },
	{ "MatchUnit", IN_RULE, KEY_GLOBS, R(match_unit), 0, 0, NULL, "globs of systemd unit names" },
	{ "MatchCgroup", IN_RULE, KEY_GLOBS, R(match_cgroup), 0, 0, NULL, "globs of cgroup2 paths, from /" },
	{ "MatchExe", IN_RULE, KEY_GLOBS, R(match_exe), 0, 0, NULL, "globs of executable paths" },
	{ "AutoFaultRate", IN_DAEMON, KEY_UINT, D(auto_fault_rate), 1, 1000000,
	  "text faults per second from 1 to 1000000",
	  "Protect=auto: a watched unit taking this many text faults per second under pressure is protected" },
	{ "AutoPressureSome", IN_DAEMON, KEY_UINT, D(auto_pressure_some), 0, 100,
	  "a percentage from 0 (faults alone) to 100",
	  "Protect=auto: memory PSI \"some\" avg10 (system or unit) that counts as pressure" },
	{ "AutoWindowSec", IN_DAEMON, KEY_UINT, D(auto_window_sec), 2, 3600, "seconds from 2 to 3600",
	  "Protect=auto: text faults per second are taken over this window" },
	{ "AutoIntervalSec", IN_DAEMON, KEY_UINT, D(auto_interval_sec), 1, 600, "seconds from 1 to 600",
	  "Protect=auto: watched units are sampled this often" },
	{ "AutoCalmSec", IN_DAEMON, KEY_UINT, D(auto_calm_sec), 0, 604800,
	  "seconds from 0 (never) to 604800",
	  "Protect=auto: an auto-protected unit is released after this long without suffering" },
	{ "Protect", IN_RULE | IN_UNIT, KEY_PROTECT, S(protect), 0, 0, "yes, no or auto",
	  "keep the program text of the matching processes in memory; auto: once they suffer" },
	{ "LockBudget", IN_RULE | IN_UNIT, KEY_BUDGET, S(lock_budget), 0, 0,
	  "bytes (K, M, G, T suffix) or a percentage of RAM", "lock backend: at most this much for the unit" },
	{ "ExecProtectLimit", IN_RULE | IN_UNIT, KEY_LIMIT, S(exec_protect_limit), 0, 0,
	  "bytes from 4K (K, M, G, T suffix) or max",
	  "kernel backend: the unit's memory.exec_protect, the most its text kept out of reclaim" },
	{ "Prewarm", IN_RULE | IN_UNIT, KEY_TRISTATE, S(prewarm), 0, 0, "yes or no",
	  "record the unit's hot text and read it back when the unit (or the daemon) starts" },
	{ "PrewarmBudget", IN_RULE | IN_UNIT, KEY_BUDGET, S(prewarm_budget), 0, 0,
	  "bytes (K, M, G, T suffix) or a percentage of RAM", "prewarm: at most this much read back for the unit" },
};
#undef D
#undef S
#undef R

static const struct policy_key *find_key(const char *name, unsigned section)
{
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if ((keys[i].sections & section) && streq(keys[i].name, name))
			return &keys[i];
	return NULL;
}

static bool is_list_key(const char *name, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		if (keys[i].kind == KEY_GLOBS && strlen(keys[i].name) == len &&
		    memcmp(keys[i].name, name, len) == 0)
			return true;
	return false;
}

/* "A, B or C": the keys of a section, for "unknown key" errors. */
static void keys_expected(unsigned section, char *buf, size_t size)
{
	size_t n = 0, k = 0, o = 0;

	for (size_t i = 0; i < ELEMENTSOF(keys); i++)
		n += (keys[i].sections & section) != 0;
	buf[0] = '\0';
	for (size_t i = 0; i < ELEMENTSOF(keys) && o < size; i++) {
		if (!(keys[i].sections & section))
			continue;
		k++;
		o += (size_t)snprintf(buf + o, size - o, "%s%s", k == 1 ? "" : k == n ? " or " : ", ",
				      keys[i].name);
	}
}

size_t policy_keys(const struct policy_key_info **ret)
{
	static struct policy_key_info info[ELEMENTSOF(keys) + 2];
	static size_t n;

	if (!n)
		for (size_t i = 0; i < ELEMENTSOF(keys); i++)
			for (unsigned sec = IN_DAEMON; sec <= IN_UNIT; sec <<= 1)
				if (keys[i].sections & sec && n < ELEMENTSOF(info))
					info[n++] = (struct policy_key_info){
						.section = sec == IN_DAEMON ? "Daemon" :
							   sec == IN_RULE   ? "Rule NAME" :
									      "X-ExecGuard",
						.key = keys[i].name,
						.help = keys[i].help,
					};
	*ret = info;
	return n;
}

static int parse_key_value(struct parse_state *st, const struct policy_key *k, const char *value,
			   void *base)
{
	void *target = (char *)base + k->offset;
	int r;

	switch (k->kind) {
	case KEY_UINT:
		r = parse_uint(value, k->min, k->max, target);
		break;
	case KEY_INT: {
		unsigned u;

		r = parse_uint(value, k->min, k->max, &u);
		if (r >= 0)
			*(int *)target = (int)u;
		break;
	}
	case KEY_BUDGET:
		r = parse_budget(value, target);
		break;
	case KEY_LIMIT:
		r = parse_exec_protect_limit(value, target);
		break;
	case KEY_BOOLEAN:
		r = parse_boolean(value);
		if (r >= 0)
			*(int *)target = r;
		break;
	case KEY_PROTECT:
		r = streq(value, "auto") ? PROTECT_AUTO : parse_boolean(value);
		if (r >= 0)
			*(int *)target = r;
		break;
	case KEY_TRISTATE:
		r = parse_boolean(value);
		if (r >= 0)
			*(int *)target = r ? PREWARM_YES : PREWARM_NO;
		break;
	case KEY_BACKEND:
		r = backend_choice_from_string(value);
		if (r >= 0)
			*(enum backend_choice *)target = (enum backend_choice)r;
		break;
	case KEY_DELAYS:
		r = parse_rescan_delays(value, base);
		break;
	default:
		r = -EINVAL;
		break;
	}
	return r < 0 ? BAD_VALUE(st, k->name, value, k->expected) : 0;
}

static int handle_globs(struct parse_state *st, const struct policy_key *k, const char *value)
{
	char ***target = (char ***)((char *)st->rule + k->offset);
	size_t first = 0;
	int r;

	while (*target && (*target)[first])
		first++;
	r = append_globs(value, target);
	if (r == -ENOMEM)
		return r;
	if (r < 0) {
		st->cont_pos = NULL; /* the rest of the line: said once */
		return policy_add_error(st->p, st->file, st->line,
					"too many patterns in %s= of [Rule %s]; at most %d", k->name,
					st->rule->name, MAX_GLOBS);
	}
	if (streq(k->name, "MatchCgroup") && *target)
		for (char **g = *target + first; *g; g++)
			if ((*g)[0] != '/' && (*g)[0] != '*')
				return policy_add_error(st->p, st->file, st->line,
							"invalid MatchCgroup=%s; cgroup paths start with '/' (e.g. /system.slice/*)",
							*g);
	return 0;
}

static int handle_key(struct parse_state *st, const char *name, const char *value)
{
	unsigned section = st->section == SECTION_DAEMON ? IN_DAEMON :
			   st->section == SECTION_RULE	 ? IN_RULE :
							   IN_UNIT;
	const struct policy_key *k = find_key(name, section);
	char expected[512];
	int r;

	if (!k) {
		keys_expected(section, expected, sizeof(expected));
		if (section == IN_RULE)
			return policy_add_error(st->p, st->file, st->line,
						"unknown key %s in [Rule %s]; expected %s", name,
						st->rule->name, expected);
		return policy_add_error(st->p, st->file, st->line, "unknown key %s in [%s]; expected %s",
					name, section == IN_DAEMON ? "Daemon" : "X-ExecGuard", expected);
	}
	if (k->kind == KEY_GLOBS)
		return handle_globs(st, k, value);
	r = parse_key_value(st, k, value,
			    section == IN_DAEMON ? (void *)&st->p->daemon :
			    section == IN_RULE	 ? (void *)&st->rule->settings :
						   (void *)st->unit);
	if (r == 0 && section == IN_DAEMON &&
	    (streq(name, "PressureStallMSec") || streq(name, "PressureWindowMSec")))
		st->pressure_line = st->line;
	if (r == 0 && section == IN_DAEMON &&
	    (streq(name, "AutoIntervalSec") || streq(name, "AutoWindowSec")))
		st->auto_line = st->line;
	return r;
}

static int on_key(void *user, const char *section, const char *name, const char *value)
{
	struct parse_state *st = user;
	int r;

	(void)section; /* the reader tracks sections, with line numbers */
	if (st->error)
		return 0;
	r = st->section == SECTION_RULE && is_list_key(name, strlen(name)) ? 0 : note_key(st, name);
	if (r != 0) {
		st->error = r < 0 ? r : 0;
		return 1; /* reported; keep parsing to find more errors */
	}
	switch (st->section) {
	case SECTION_DAEMON:
	case SECTION_RULE:
	case SECTION_UNIT:
		r = handle_key(st, name, value);
		break;
	default:
		r = 0;
		break;
	}
	if (r < 0)
		st->error = r;
	return 1;
}

static int parse_common(struct parse_state *st)
{
	int r;

	r = ini_parse_stream(read_line, st, on_key, st);
	if (st->error < 0)
		return st->error;
	if (r > 0)
		/* The reader lets only well-formed lines through, so this is
		 * a line inih itself rejected. */
		return policy_add_error(st->p, st->file, (unsigned)r, "could not parse line");
	return r < 0 ? -ENOMEM : 0;
}

int policy_parse_buffer(struct policy *p, const char *file, const char *buf, size_t len)
{
	struct parse_state st = {
		.p = p,
		.file = file,
		/* A byte order mark is skipped, as systemd skips it. */
		.cur = { .pos = buf + ini_bom_len(buf, len), .end = buf + len },
	};
	size_t before = p->n_errors, rules_before = p->n_rules;
	int r;

	r = parse_common(&st);
	if (r < 0)
		return r;
	/* Allowed, but rarely meant: a rule without a Match key. Not said
	 * when the file has errors: its Match line may be the bad one. */
	for (size_t i = rules_before; p->n_errors == before && i < p->n_rules; i++) {
		const struct rule *rule = &p->rules[i];

		if (!rule->match_unit && !rule->match_cgroup && !rule->match_exe &&
		    (r = policy_add_warning(p, file, rule->line,
					    "[Rule %s] has no MatchUnit=, MatchCgroup= or MatchExe=: it applies to every process",
					    rule->name)) < 0)
			return r;
	}
	/* The two keys depend on each other: check them once both are read,
	 * in whatever order the file gives them. */
	if (st.pressure_line && p->daemon.pressure_stall_ms >= p->daemon.pressure_window_ms) {
		r = policy_add_error(p, file, st.pressure_line,
				     "PressureStallMSec=%u must be below PressureWindowMSec=%u",
				     p->daemon.pressure_stall_ms, p->daemon.pressure_window_ms);
		if (r < 0)
			return r;
	}
	/* The rate needs two samples inside the window. */
	if (st.auto_line && p->daemon.auto_interval_sec * 2 > p->daemon.auto_window_sec) {
		r = policy_add_error(p, file, st.auto_line,
				     "AutoWindowSec=%u must be at least twice AutoIntervalSec=%u",
				     p->daemon.auto_window_sec, p->daemon.auto_interval_sec);
		if (r < 0)
			return r;
	}
	return (int)(p->n_errors - before);
}

int policy_parse_unit_buffer(struct rule_settings *s, struct policy *errors_to, const char *file,
			     const char *buf, size_t len)
{
	struct parse_state st = {
		.p = errors_to,
		.file = file,
		/* A byte order mark is skipped, as systemd skips it. */
		.cur = { .pos = buf + ini_bom_len(buf, len), .end = buf + len },
		.unit_mode = true,
		.unit = s,
	};
	size_t before = errors_to->n_errors;
	int r;

	r = parse_common(&st);
	if (r < 0)
		return r;
	return (int)(errors_to->n_errors - before);
}

int policy_check_file_mode(int fd, const char **ret_why)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode)) {
		*ret_why = "not a regular file";
		return -EPERM;
	}
	if (st.st_uid != 0 && st.st_uid != geteuid()) {
		*ret_why = "owned by another user (must be root's)";
		return -EPERM;
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		*ret_why = "writable by group or others (chmod go-w)";
		return -EPERM;
	}
	return 0;
}

static int add_file(struct policy *p, const char *path)
{
	return strv_push(&p->files, &p->n_files, path);
}

#define POLICY_FILE_MAX (1 << 20)

static bool is_dev_null(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3);
}

/* Only blanks (or nothing): says nothing, probably by mistake. */
static bool is_empty(const char *buf, size_t len)
{
	for (size_t i = ini_bom_len(buf, len); i < len; i++)
		if (!strchr(" \t\r\n", buf[i]))
			return false;
	return true;
}

/* Read one file. Symbolic links are followed and the file they lead to
 * judged (as systemd reads its configuration); one to /dev/null is a
 * mask, read as nothing. masks: a file of the same name that this one
 * hides, so that an empty file is a mask and not a mistake. */
static int load_one(struct policy *p, const char *path, bool allow_missing, bool masks)
{
	_cleanup_close_ int fd = -1;
	_cleanup_free_ char *buf = NULL;
	const char *why;
	size_t len;
	int r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT && allow_missing)
			return 0;
		return policy_add_error(p, path, 0, "cannot open: %s", STRERROR(errno)) ?: -errno;
	}
	if (is_dev_null(fd))
		return 0;
	r = policy_check_file_mode(fd, &why);
	if (r == -EPERM)
		return policy_add_error(p, path, 0, "refused: %s", why) ?: r;
	if (r < 0)
		return r;
	r = read_fd(fd, POLICY_FILE_MAX, &buf, &len);
	if (r < 0)
		return policy_add_error(p, path, 0, "cannot read: %s", STRERROR(r)) ?: r;
	r = add_file(p, path);
	if (r < 0)
		return r;
	if (!masks && is_empty(buf, len))
		return policy_add_warning(p, path, 0, "empty file: it sets nothing");
	r = policy_parse_buffer(p, path, buf, len);
	return r < 0 ? r : 0;
}

static int conf_filter(const struct dirent *d)
{
	size_t l = strlen(d->d_name);

	return d->d_name[0] != '.' && l > 5 && streq(d->d_name + l - 5, ".conf");
}

/* One drop-in: its name, the directory it is read from, whether it hides
 * files of the same name in directories of lower priority. */
struct dropin {
	char *name;
	const char *dir;
	bool masks;
};

static int dropin_cmp(const void *a, const void *b)
{
	return strcmp(((const struct dropin *)a)->name, ((const struct dropin *)b)->name);
}

/* Add the *.conf of dir that no directory before it has; the others are
 * masked. */
static int collect_dropins(struct policy *p, const char *dir, struct dropin **v, size_t *n)
{
	struct dirent **list = NULL;
	int k, r = 0;

	k = scandir(dir, &list, conf_filter, NULL);
	if (k < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 :
		       policy_add_error(p, dir, 0, "cannot read directory: %s", STRERROR(errno));
	for (int i = 0; i < k; i++) {
		const char *name = list[i]->d_name;
		struct dropin *d = NULL, *nv;

		for (size_t j = 0; j < *n && !d; j++)
			if (streq((*v)[j].name, name))
				d = &(*v)[j];
		if (r < 0) {
			/* out of memory: only free what is left */
		} else if (d) {
			char path[PATH_MAX];

			d->masks = true;
			snprintf(path, sizeof(path), "%s/%s", dir, name);
			r = strv_push(&p->masked, &p->n_masked, path);
		} else if (!(nv = realloc(*v, (*n + 1) * sizeof(**v)))) {
			r = -ENOMEM;
		} else {
			*v = nv;
			nv[*n] = (struct dropin){ .name = strdup(name), .dir = dir };
			r = nv[(*n)++].name ? 0 : -ENOMEM;
		}
		free(list[i]);
	}
	free(list);
	return r;
}

int policy_load(struct policy *p, const char *main_file, const char *const *dropin_dirs, bool allow_missing)
{
	struct dropin *v = NULL;
	size_t n = 0;
	int r;

	r = load_one(p, main_file, allow_missing, false);
	if (r < 0 && r != -EPERM && r != -ENOENT && r != -EACCES)
		return r;
	r = 0;
	for (const char *const *d = dropin_dirs; d && *d && r >= 0; d++)
		r = collect_dropins(p, *d, &v, &n);
	/* By name across the directories, as systemd orders drop-ins;
	 * strcmp(), not the locale's order. */
	if (r >= 0 && n)
		qsort(v, n, sizeof(*v), dropin_cmp);
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX];

		if (r == -ENOMEM) {
			/* only free what is left */
		} else if (snprintf(path, sizeof(path), "%s/%s", v[i].dir, v[i].name) >= (int)sizeof(path)) {
			r = policy_add_error(p, v[i].dir, 0, "path of %s too long", v[i].name);
		} else {
			r = load_one(p, path, false, v[i].masks);
		}
		free(v[i].name);
	}
	free(v);
	if (r == -ENOMEM)
		return r;
	return p->n_errors ? -EINVAL : 0;
}

int policy_paths_init(struct policy_paths *pp, const char *config)
{
	static const char *const defaults[] = { DEFAULT_DROPIN_DIRS };
	size_t l;

	*pp = (struct policy_paths){ .main = config ?: DEFAULT_CONFIG, .given = config };
	if (!config) {
		for (size_t i = 0; i < ELEMENTSOF(defaults) && i < ELEMENTSOF(pp->dirs) - 1; i++)
			pp->dirs[i] = defaults[i];
		return 0;
	}
	l = strlen(config);
	if (l > 5 && streq(config + l - 5, ".conf"))
		l -= 5;
	if (asprintf(&pp->own_dir, "%.*s.d", (int)l, config) < 0) {
		pp->own_dir = NULL;
		return -ENOMEM;
	}
	pp->dirs[0] = pp->own_dir;
	return 0;
}

void policy_paths_done(struct policy_paths *pp)
{
	free(pp->own_dir);
	*pp = (struct policy_paths){ 0 };
}

static bool glob_any(char **globs, const char *s)
{
	if (!globs)
		return true;
	if (!s)
		return false;
	/* Backslashes are literal, as systemd matches unit globs: its
	 * escaped names ("foo\x2dbar.service") are written as shown. */
	for (char **g = globs; *g; g++)
		if (fnmatch(*g, s, FNM_NOESCAPE) == 0)
			return true;
	return false;
}

static void apply_settings(struct rule_settings *into, const struct rule_settings *from)
{
	if (from->protect >= 0)
		into->protect = from->protect;
	if (from->lock_budget.set)
		into->lock_budget = from->lock_budget;
	if (from->exec_protect_limit)
		into->exec_protect_limit = from->exec_protect_limit;
	if (from->prewarm)
		into->prewarm = from->prewarm;
	if (from->prewarm_budget.set)
		into->prewarm_budget = from->prewarm_budget;
}

bool policy_may_protect(const struct policy *p, const struct policy_input *in)
{
	if (in->unit_section && in->unit_section->protect > 0)
		return true;
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct rule *r = &p->rules[i];

		if (r->settings.protect > 0 && glob_any(r->match_unit, in->unit) &&
		    glob_any(r->match_cgroup, in->cgroup))
			return true;
	}
	return false;
}

bool policy_exe_matters(const struct policy *p, const struct policy_input *in)
{
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct rule *r = &p->rules[i];

		if (r->match_exe && glob_any(r->match_unit, in->unit) && glob_any(r->match_cgroup, in->cgroup))
			return true;
	}
	return false;
}

bool policy_names_exes(const struct policy *p)
{
	for (size_t i = 0; i < p->n_rules; i++)
		if (p->rules[i].match_exe)
			return true;
	return false;
}

bool policy_matches_beyond_units(const struct policy *p)
{
	for (size_t i = 0; i < p->n_rules; i++)
		if (!p->rules[i].match_unit && p->rules[i].settings.protect > 0)
			return true;
	return false;
}

void policy_decide(const struct policy *p, const struct policy_input *in, struct policy_decision *ret)
{
	*ret = (struct policy_decision){
		.settings = { .protect = 0 },
		.protect_source = "default",
		.protect_kind = "default",
	};
	for (size_t i = 0; i < p->n_rules; i++) {
		const struct rule *r = &p->rules[i];

		if (!glob_any(r->match_unit, in->unit) || !glob_any(r->match_cgroup, in->cgroup) ||
		    !glob_any(r->match_exe, in->exe))
			continue;
		apply_settings(&ret->settings, &r->settings);
		if (r->settings.protect >= 0) {
			ret->protect_source = r->name;
			ret->protect_kind = "policy";
		}
		if (ret->n_matched < ELEMENTSOF(ret->matched))
			ret->matched[ret->n_matched++] = r;
	}
	if (in->unit_section) {
		apply_settings(&ret->settings, in->unit_section);
		if (in->unit_section->protect >= 0) {
			ret->protect_source = in->unit_section_source ?: "unit file";
			ret->protect_kind = in->unit_section_kind ?: "drop-in";
		}
	}
	ret->protect = ret->settings.protect == 1;
	ret->watch = ret->settings.protect == PROTECT_AUTO;
}

int policy_container_request(const struct daemon_settings *d, const char *value, struct rule_settings *ret,
			     const char **ret_why)
{
	uint64_t asked = EXEC_PROTECT_LIMIT_MAX, limit = d->container_protect_max;
	int yes = parse_boolean(value);
	bool sized = yes < 0;

	*ret = (struct rule_settings){ .protect = 0 };
	if (!d->container_annotations) {
		*ret_why = "ContainerAnnotations=no in [Daemon]";
		return -EPERM;
	}
	if (yes == 0)
		return 0;
	if (sized && parse_exec_protect_limit(value, &asked) < 0) {
		*ret_why = "expected yes, no, max or a size from 4K (K, M, G, T suffix)";
		return -EINVAL;
	}
	if (asked < limit)
		limit = asked;
	ret->protect = 1;
	ret->exec_protect_limit = limit;
	if (limit != EXEC_PROTECT_LIMIT_MAX)
		ret->lock_budget = (struct budget){ .bytes = limit, .set = true };
	/* "yes" is "as much as a container may have"; max or a size asked more */
	return sized && asked > limit;
}

static void print_one(const struct policy_error *e, const char *prefix, FILE *f)
{
	if (e->line)
		fprintf(f, "%s:%u: %s%s\n", e->file, e->line, prefix, e->message);
	else
		fprintf(f, "%s: %s%s\n", e->file, prefix, e->message);
}

size_t policy_print_errors(const struct policy *p, FILE *f)
{
	for (size_t i = 0; i < p->n_errors; i++)
		print_one(&p->errors[i], "", f);
	return p->n_errors;
}

size_t policy_print_warnings(const struct policy *p, FILE *f)
{
	for (size_t i = 0; i < p->n_warnings; i++)
		print_one(&p->warnings[i], "warning: ", f);
	return p->n_warnings;
}
