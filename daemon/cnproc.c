/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <linux/cn_proc.h>
#include <linux/connector.h>
#include <linux/netlink.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "cnproc.h"
#include "util.h"

/* Debian 12's uapi headers predate the 6.6 event filter. */
struct cnproc_filter_input {
	uint32_t mcast_op;
	uint32_t event_type;
};

#define EV_EXEC 0x00000002U
#define EV_EXIT 0x80000000U

/* The fixed part of struct proc_event before its union. */
#define EVENT_HEADER_SIZE 16

static uint32_t get_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint64_t get_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int decode_event(const uint8_t *data, size_t len, struct cnproc_event *ev)
{
	uint32_t what;

	if (len < EVENT_HEADER_SIZE)
		return -EBADMSG;
	what = get_u32(data);
	*ev = (struct cnproc_event){
		.timestamp_ns = get_u64(data + 8),
	};
	data += EVENT_HEADER_SIZE;
	len -= EVENT_HEADER_SIZE;
	switch (what) {
	case 0: /* PROC_EVENT_NONE: the reply to a subscription */
		if (len < 4)
			return -EBADMSG;
		ev->type = CNPROC_ACK;
		ev->err = get_u32(data);
		return 0;
	case EV_EXEC:
	case EV_EXIT:
		if (len < 8)
			return -EBADMSG;
		ev->type = what == EV_EXEC ? CNPROC_EXEC : CNPROC_EXIT;
		ev->pid = (pid_t)get_u32(data);
		ev->tgid = (pid_t)get_u32(data + 4);
		if (ev->pid <= 0 || ev->tgid <= 0)
			return -EBADMSG;
		return 0;
	default:
		ev->type = CNPROC_OTHER;
		return 0;
	}
}

int cnproc_decode(const void *buf, size_t len, struct cnproc_event *out, size_t max)
{
	const uint8_t *p = buf;
	size_t n = 0;

	while (len > 0) {
		struct nlmsghdr nh;
		struct cn_msg cn;
		size_t msg_len, aligned;
		int r;

		if (len < sizeof(nh))
			return -EBADMSG;
		memcpy(&nh, p, sizeof(nh));
		msg_len = nh.nlmsg_len;
		if (msg_len < sizeof(nh) || msg_len > len)
			return -EBADMSG;
		if (nh.nlmsg_type == NLMSG_ERROR || nh.nlmsg_type == NLMSG_OVERRUN)
			return -EPROTO;
		if (nh.nlmsg_type == NLMSG_NOOP)
			goto next;
		if (msg_len - sizeof(nh) < sizeof(cn))
			return -EBADMSG;
		memcpy(&cn, p + NLMSG_HDRLEN, sizeof(cn));
		if (cn.id.idx != CN_IDX_PROC || cn.id.val != CN_VAL_PROC)
			return -EPROTO;
		if (cn.len > msg_len - NLMSG_HDRLEN - sizeof(cn))
			return -EBADMSG;
		if (n < max) {
			r = decode_event(p + NLMSG_HDRLEN + sizeof(cn), cn.len, &out[n]);
			if (r < 0)
				return r;
			n++;
		}
	next:
		aligned = NLMSG_ALIGN(msg_len);
		if (aligned >= len)
			break;
		p += aligned;
		len -= aligned;
	}
	return (int)n;
}

bool kernel_release_at_least(const char *release, unsigned major, unsigned minor)
{
	unsigned a = 0, b = 0;

	if (sscanf(release, "%u.%u", &a, &b) < 2)
		return false;
	return a > major || (a == major && b >= minor);
}

/* The kernel's fixed inode numbers of the initial namespaces
 * (include/linux/proc_ns.h). */
#define PROC_USER_INIT_INO 0xEFFFFFFDU
#define PROC_PID_INIT_INO 0xEFFFFFFCU

const char *cnproc_namespace_refused(uint64_t pid_ns, uint64_t user_ns)
{
	if (pid_ns != PROC_PID_INIT_INO)
		return "PID";
	if (user_ns != PROC_USER_INIT_INO)
		return "user";
	return NULL;
}

const char *cnproc_namespace_refused_self(void)
{
	struct stat p, u;

	/* The daemon's own, whatever proc root it watches. */
	if (stat("/proc/self/ns/pid", &p) < 0 || stat("/proc/self/ns/user", &u) < 0)
		return NULL;
	return cnproc_namespace_refused(p.st_ino, u.st_ino);
}

int cnproc_open(int rcvbuf)
{
	_cleanup_close_ int fd = -1;
	struct sockaddr_nl sa = {
		.nl_family = AF_NETLINK,
		.nl_groups = CN_IDX_PROC,
		.nl_pid = 0, /* let the kernel pick a unique port id */
	};

	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_CONNECTOR);
	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof(rcvbuf)) < 0 &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf)) < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	return TAKE_FD(fd);
}

int cnproc_subscribe(int fd, bool filter, bool exits)
{
	/* nlmsghdr, cn_msg and the request, laid out by hand: struct
	 * cn_msg ends in a flexible array and cannot be embedded. */
	uint8_t req[NLMSG_HDRLEN + sizeof(struct cn_msg) + sizeof(struct cnproc_filter_input)];
	struct nlmsghdr nh = { 0 };
	struct cn_msg cn = { 0 };
	struct cnproc_filter_input in = {
		.mcast_op = PROC_CN_MCAST_LISTEN,
		.event_type = exits ? EV_EXEC | EV_EXIT : EV_EXEC,
	};
	size_t payload = filter ? sizeof(in) : sizeof(uint32_t);
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };

	nh.nlmsg_len = (uint32_t)(NLMSG_HDRLEN + sizeof(cn) + payload);
	nh.nlmsg_type = NLMSG_DONE;
	cn.id.idx = CN_IDX_PROC;
	cn.id.val = CN_VAL_PROC;
	cn.len = (uint16_t)payload;
	memset(req, 0, sizeof(req));
	memcpy(req, &nh, sizeof(nh));
	memcpy(req + NLMSG_HDRLEN, &cn, sizeof(cn));
	/* Without the filter the payload is just the op, the first field. */
	memcpy(req + NLMSG_HDRLEN + sizeof(cn), &in, payload);

	if (sendto(fd, req, nh.nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0)
		return -errno;
	return 0;
}

ssize_t cnproc_receive(int fd, void *buf, size_t size)
{
	struct sockaddr_nl from;
	socklen_t fl = sizeof(from);
	ssize_t n;

	n = recvfrom(fd, buf, size, MSG_TRUNC, (struct sockaddr *)&from, &fl);
	if (n < 0)
		return -errno;
	if (from.nl_pid != 0)
		return -EPERM;
	if ((size_t)n > size)
		return -EMSGSIZE;
	return n;
}
