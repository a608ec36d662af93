/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Copied a thousand times by host-scale: each copy a distinct library. */
int scale_lib_work(int x);

int scale_lib_work(int x)
{
	return x * 3 + 1;
}
