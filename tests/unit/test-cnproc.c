/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <linux/connector.h>
#include <linux/netlink.h>
#include <stdint.h>

#include "cnproc.h"
#include "test.h"
#include "util.h"

/* Build one connector message as the kernel sends it. */
static size_t put_msg(uint8_t *buf, uint32_t what, uint32_t a, uint32_t b, uint64_t ts,
		      uint32_t idx)
{
	struct nlmsghdr nh = { 0 };
	struct cn_msg cn = { 0 };
	uint8_t ev[40] = { 0 };
	size_t evlen = 16 + 24;

	memcpy(ev, &what, 4);
	memcpy(ev + 8, &ts, 8);
	memcpy(ev + 16, &a, 4);
	memcpy(ev + 20, &b, 4);
	cn.id.idx = idx;
	cn.id.val = CN_VAL_PROC;
	cn.len = (uint16_t)evlen;
	nh.nlmsg_len = (uint32_t)(NLMSG_HDRLEN + sizeof(cn) + evlen);
	nh.nlmsg_type = NLMSG_DONE;
	memcpy(buf, &nh, sizeof(nh));
	memcpy(buf + NLMSG_HDRLEN, &cn, sizeof(cn));
	memcpy(buf + NLMSG_HDRLEN + sizeof(cn), ev, evlen);
	return NLMSG_ALIGN(nh.nlmsg_len);
}

static void test_exec_exit(void)
{
	uint8_t buf[512];
	struct cnproc_event ev[4];
	size_t len = 0;

	len += put_msg(buf + len, 0x00000002, 101, 100, 12345, CN_IDX_PROC);
	len += put_msg(buf + len, 0x80000000, 100, 100, 12399, CN_IDX_PROC);
	len += put_msg(buf + len, 0x00000001, 5, 5, 1, CN_IDX_PROC); /* fork: other */
	CHECK_EQ_INT(cnproc_decode(buf, len, ev, 4), 3);
	CHECK_EQ_INT(ev[0].type, CNPROC_EXEC);
	CHECK_EQ_INT(ev[0].pid, 101);
	CHECK_EQ_INT(ev[0].tgid, 100);
	CHECK_EQ_INT(ev[0].timestamp_ns, 12345);
	CHECK_EQ_INT(ev[1].type, CNPROC_EXIT);
	CHECK_EQ_INT(ev[2].type, CNPROC_OTHER);
	/* More events than room: only max are returned. */
	CHECK_EQ_INT(cnproc_decode(buf, len, ev, 2), 2);
}

static void test_ack(void)
{
	uint8_t buf[256];
	struct cnproc_event ev[1];
	size_t len = put_msg(buf, 0, 22, 0, 0, CN_IDX_PROC);

	CHECK_EQ_INT(cnproc_decode(buf, len, ev, 1), 1);
	CHECK_EQ_INT(ev[0].type, CNPROC_ACK);
	CHECK_EQ_INT(ev[0].err, 22);
}

static void test_bad(void)
{
	uint8_t buf[256];
	struct cnproc_event ev[2];
	size_t len = put_msg(buf, 2, 1, 1, 0, CN_IDX_PROC);
	struct nlmsghdr nh;

	/* Truncated anywhere: never read past the end. */
	for (size_t cut = 1; cut < len; cut++)
		CHECK(cnproc_decode(buf, cut, ev, 2) < 0);
	/* Another connector index. */
	len = put_msg(buf, 2, 1, 1, 0, CN_IDX_PROC + 1);
	CHECK_EQ_INT(cnproc_decode(buf, len, ev, 2), -EPROTO);
	/* A netlink error message. */
	len = put_msg(buf, 2, 1, 1, 0, CN_IDX_PROC);
	memcpy(&nh, buf, sizeof(nh));
	nh.nlmsg_type = NLMSG_ERROR;
	memcpy(buf, &nh, sizeof(nh));
	CHECK_EQ_INT(cnproc_decode(buf, len, ev, 2), -EPROTO);
	/* Length field larger than the datagram. */
	len = put_msg(buf, 2, 1, 1, 0, CN_IDX_PROC);
	nh.nlmsg_type = NLMSG_DONE;
	nh.nlmsg_len = 4096;
	memcpy(buf, &nh, sizeof(nh));
	CHECK_EQ_INT(cnproc_decode(buf, len, ev, 2), -EBADMSG);
	/* pid 0 in an exec event. */
	len = put_msg(buf, 2, 0, 0, 0, CN_IDX_PROC);
	CHECK_EQ_INT(cnproc_decode(buf, len, ev, 2), -EBADMSG);
}

static void test_release(void)
{
	CHECK(kernel_release_at_least("6.6.0", 6, 6));
	CHECK(kernel_release_at_least("6.18.44-fc-v1045", 6, 6));
	CHECK(kernel_release_at_least("7.0", 6, 6));
	CHECK(!kernel_release_at_least("6.1.0-27-amd64", 6, 6));
	CHECK(!kernel_release_at_least("5.19.1", 6, 6));
	CHECK(!kernel_release_at_least("garbage", 6, 6));
}

/* The connector serves the initial PID and user namespaces only. */
static void test_namespaces(void)
{
	CHECK(cnproc_namespace_refused(0xEFFFFFFCU, 0xEFFFFFFDU) == NULL);
	CHECK_STREQ(cnproc_namespace_refused(4026532201U, 0xEFFFFFFDU), "PID");
	CHECK_STREQ(cnproc_namespace_refused(0xEFFFFFFCU, 4026532202U), "user");
}

TEST_MAIN(test_namespaces, test_exec_exit, test_ack, test_bad, test_release)
