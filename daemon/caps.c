/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "caps.h"
#include "util.h"

/* Names up to CAP_CHECKPOINT_RESTORE (40), in the kernel's order. */
static const char *const cap_names[] = {
	"chown", "dac_override", "dac_read_search", "fowner", "fsetid", "kill", "setgid",
	"setuid", "setpcap", "linux_immutable", "net_bind_service", "net_broadcast",
	"net_admin", "net_raw", "ipc_lock", "ipc_owner", "sys_module", "sys_rawio",
	"sys_chroot", "sys_ptrace", "sys_pacct", "sys_admin", "sys_boot", "sys_nice",
	"sys_resource", "sys_time", "sys_tty_config", "mknod", "lease", "audit_write",
	"audit_control", "setfcap", "mac_override", "mac_admin", "syslog", "wake_alarm",
	"block_suspend", "audit_read", "perfmon", "bpf", "checkpoint_restore",
};

const char *caps_format(uint64_t mask, char *buf, size_t size)
{
	size_t used = 0;

	if (size == 0)
		return buf;
	buf[0] = '\0';
	for (unsigned c = 0; c < 64 && used < size; c++) {
		int n;

		if (!(mask & CAP_BIT(c)))
			continue;
		if (c < ELEMENTSOF(cap_names))
			n = snprintf(buf + used, size - used, "%scap_%s", used ? "," : "", cap_names[c]);
		else
			n = snprintf(buf + used, size - used, "%scap_%u", used ? "," : "", c);
		if (n < 0)
			break;
		used += (size_t)n;
	}
	if (!mask)
		snprintf(buf, size, "none");
	return buf;
}

static int capget_(struct __user_cap_data_struct data[2])
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };

	return syscall(SYS_capget, &h, data) < 0 ? -errno : 0;
}

int caps_get_effective(uint64_t *ret)
{
	struct __user_cap_data_struct d[2] = { 0 }; /* valgrind sees only d[0] written */
	int r = capget_(d);

	if (r < 0)
		return r;
	*ret = (uint64_t)d[0].effective | (uint64_t)d[1].effective << 32;
	return 0;
}

static unsigned last_cap(void)
{
	_cleanup_free_ char *buf = NULL;
	unsigned long v;

	if (read_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", 64, &buf, NULL) < 0 ||
	    sscanf(buf, "%lu", &v) != 1 || v > 63)
		return 40;
	return (unsigned)v;
}

int caps_keep_only(uint64_t keep, uint64_t *ret_kept, int *ret_bounding)
{
	struct __user_cap_header_struct h = { .version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2] = { 0 }; /* valgrind sees only d[0] written */
	uint64_t permitted;
	int r, bounding = 1;

	r = capget_(d);
	if (r < 0)
		return r;
	permitted = (uint64_t)d[0].permitted | (uint64_t)d[1].permitted << 32;
	keep &= permitted;
	/* The bounding set first: dropping from it needs CAP_SETPCAP, which
	 * goes with the rest below. Under systemd it is set by the unit. */
	for (unsigned c = 0; c <= last_cap(); c++) {
		if (keep & CAP_BIT(c) || prctl(PR_CAPBSET_READ, c, 0, 0, 0) != 1)
			continue;
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno != EPERM)
				return -errno;
			bounding = 0;
			break;
		}
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	for (int i = 0; i < 2; i++) {
		d[i].effective = d[i].permitted = (uint32_t)(keep >> (32 * i));
		d[i].inheritable = 0;
	}
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	/* We never exec; should anything make us, it gains nothing. */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	if (ret_kept)
		*ret_kept = keep;
	if (ret_bounding)
		*ret_bounding = bounding;
	return 0;
}
