/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdint.h>
#include <stdio.h>

#include "policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The first byte picks the parser: the policy file or a unit file. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy p;
	struct rule_settings s = { .protect = -1 };
	struct policy_decision d;
	struct policy_input in = { .unit = "a.service", .cgroup = "/system.slice/a.service", .exe = "/usr/bin/a" };

	if (size < 1)
		return 0;
	policy_init(&p);
	if (data[0] & 1)
		policy_parse_unit_buffer(&s, &p, "fuzz.service", (const char *)data + 1, size - 1);
	else
		policy_parse_buffer(&p, "fuzz.conf", (const char *)data + 1, size - 1);
	in.unit_section = &s;
	policy_decide(&p, &in, &d);
	policy_done(&p);
	return 0;
}
