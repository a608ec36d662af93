/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdlib.h>

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

void backend_file_reports_free(struct backend_file_report *f, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(f[i].path);
	free(f);
}
