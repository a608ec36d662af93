/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The OCI runtime state a hook reads on its standard input (runtime-spec
 * "state": ociVersion, id, status, pid, bundle, annotations), reduced to
 * what execguard-oci-hook asks the daemon: the container's process, the
 * value of io.execguard.protect and the names Kubernetes runtimes put in
 * the annotations. Pure: the hook, its unit test and its fuzzer call it. */
#pragma once

#include <stddef.h>
#include <sys/types.h>

#define OCI_ANNOTATION_PROTECT "io.execguard.protect"
/* More than any real state (annotations are limited to 256 KiB in
 * Kubernetes): a hook reads at most this much. */
#define OCI_STATE_MAX (1024 * 1024)

struct oci_state {
	char *id;	  /* the container's id */
	pid_t pid;	  /* its first process, in the host's pid namespace */
	char *status;	  /* "creating", "created"... or NULL */
	char *protect;	  /* io.execguard.protect, NULL when absent */
	/* From CRI-O's (io.kubernetes.*) or containerd's (io.kubernetes.cri.*)
	 * annotations; NULL when absent. */
	char *pod_name, *pod_namespace, *pod_uid, *container_name;
};

/* 0, or -EBADMSG with a reason in *ret_why (static text) when buf is not
 * a state a hook can use: not JSON, no id, no pid, wrong types. */
int oci_state_parse(const char *buf, size_t len, struct oci_state *ret, const char **ret_why);
void oci_state_done(struct oci_state *s);
