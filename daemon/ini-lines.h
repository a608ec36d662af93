/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The one reader of INI lines (policy files, units' [X-ExecGuard]
 * sections, execguardctl's search for them): what a line is, with
 * inline comments removed, over a buffer that need not end in a NUL.
 * The values' meaning is the policy's; this only splits lines. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum ini_line_kind {
	INI_BLANK,	/* nothing but white space */
	INI_COMMENT,	/* first non-blank is '#' or ';' */
	INI_SECTION,	/* "[NAME]" */
	INI_ASSIGNMENT, /* "KEY=VALUE" */
	INI_OTHER,	/* none of these: not KEY=VALUE */
};

struct ini_line {
	enum ini_line_kind kind;
	unsigned number;	  /* 1-based */
	const char *raw;	  /* the line as it is in the buffer */
	/* The line without leading and trailing white space (CR included)
	 * and without an inline comment. */
	const char *text;
	size_t len;
	/* INI_SECTION: the name between the brackets; INI_ASSIGNMENT: the
	 * key, white space around it removed. */
	const char *name;
	size_t name_len;
	/* INI_ASSIGNMENT: the value, white space around it removed. */
	const char *value;
	size_t value_len;
	/* INI_SECTION: no ']' (name runs to the end), or something other
	 * than a comment after it. */
	bool unclosed, trailing;
};

/* Where the next line starts. Set pos and end; line counts from 0. */
struct ini_cursor {
	const char *pos, *end;
	unsigned line;
};

/* A UTF-8 byte order mark at the start of a file: its length (3), else 0. */
size_t ini_bom_len(const char *buf, size_t len);

/* Classify the next line; false at the end of the buffer. An inline
 * comment is a '#' or ';' after a blank (space or tab): it and the
 * blanks before it are removed. */
bool ini_next_line(struct ini_cursor *c, struct ini_line *ret);

/* Whether l is a section header named name. */
bool ini_line_is_section(const struct ini_line *l, const char *name);
/* Whether l assigns key. */
bool ini_line_is_key(const struct ini_line *l, const char *key);
