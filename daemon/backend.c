/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "backend.h"

/* Until the lock backend module is linked in, its symbol is weak. */
__attribute__((weak)) extern const struct backend_ops backend_lock_ops;

const struct backend_ops *backend_ops_for(enum backend_choice c)
{
	switch (c) {
	case BACKEND_KERNEL:
		return &backend_kernel_ops;
	case BACKEND_LOCK:
		return &backend_lock_ops ? &backend_lock_ops : NULL;
	case BACKEND_NONE:
		return &backend_none_ops;
	case BACKEND_AUTO:
		break;
	}
	return NULL;
}
