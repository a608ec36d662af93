/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "backend.h"

const struct backend_ops *backend_ops_for(enum backend_choice c)
{
	switch (c) {
	case BACKEND_KERNEL:
		return &backend_kernel_ops;
	case BACKEND_LOCK:
		return &backend_lock_ops;
	case BACKEND_NONE:
		return &backend_none_ops;
	case BACKEND_AUTO:
		break;
	}
	return NULL;
}
