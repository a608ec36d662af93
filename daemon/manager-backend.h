/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The backend's start steps (manager-state.h); manager.h has them too. */
#pragma once

#include "manager-state.h"

/* Which backend protects: Backend= (or --backend=), auto trying them in
 * order; set up, with Protect=auto's engine. */
int manager_pick_backend(struct manager *m);
/* Keep only the capabilities the backend needs (after the connector and
 * the bus are set up). */
int manager_drop_privileges(struct manager *m);
