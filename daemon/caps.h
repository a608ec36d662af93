/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Capabilities: what each backend needs, and dropping all the rest once
 * the daemon is set up. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define CAP_BIT(c) (1ULL << (c))

/* Every backend: a new proc connector socket after an error (NET_ADMIN)
 * and other users' /proc/PID/exe and maps (SYS_PTRACE). */
#define CAPS_COMMON (CAP_BIT(12) /* NET_ADMIN */ | CAP_BIT(19) /* SYS_PTRACE */)

/* "cap_net_admin,cap_sys_ptrace"; "none" for 0. Returns buf. */
const char *caps_format(uint64_t mask, char *buf, size_t size);

/* The effective set of this process, from capget(). */
int caps_get_effective(uint64_t *ret);

/* Keep only the capabilities in keep, of those held: effective and
 * permitted set to them, inheritable and ambient emptied, the bounding
 * set narrowed when CAP_SETPCAP allows it (*ret_bounding tells), and
 * no_new_privs set. *ret_kept: what remains effective. */
int caps_keep_only(uint64_t keep, uint64_t *ret_kept, int *ret_bounding);
