/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the lock backend offers besides struct backend_ops: its figures
 * for execguardctl/D-Bus and the tests, and an immediate re-check. The
 * state pointer is the one backend_lock_ops.create() returned. */
#pragma once

#include <stdio.h>

#include "lockset.h"

/* The engine with every range, unit and figure; read it with
 * lockset_totals(), lockset_file_stats() and lockset_unit_stats(). Valid
 * until the next call into the backend. */
const struct lockset *backend_lock_lockset(void *state);

/* Look at residency now (what the re-check timer does). */
int backend_lock_recheck(void *state);

/* One "key=value ..." line per total, file and unit, paths last:
 *   total ranges=.. open=.. admitted=.. refused=.. unlockable=.. failed=..
 *         processes=.. units=.. mapped=.. resident=.. locked=.. kept=..
 *         (ranges no process maps) kept_locked=.. cap=..
 *         ceiling=..|none pressure_events=.. (give-backs) psi_events=..
 *         available=.. (MemAvailable) reserve=.. psi=PATH:some:STALL/WINDOW|none
 *   file dev=.. ino=.. ranges=.. units=.. pids=.. mapped=.. resident=..
 *        locked=.. state=.. refusal=.. path=...
 *   range dev=.. ino=.. offset=.. length=.. prot=r-xp units=.. pids=..
 *         kept=0|1 resident=.. locked=.. state=.. refusal=.. path=...
 *   unit pids=.. ranges=.. mapped=.. resident=.. locked=.. kept=..
 *        kept_locked=.. charged=..
 *        cap=.. ceiling=..|none pressure_events=.. psi_events=..
 *        room=BYTES limit=.. reserve=..|none psi=PATH|none name=...
 * Bytes are decimal. */
int backend_lock_dump(void *state, FILE *f);
