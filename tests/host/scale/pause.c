/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The smallest long-lived process: static, so that tens of thousands of
 * them start fast and cost little. */
#include <unistd.h>

int main(void)
{
	pause();
	return 0;
}
