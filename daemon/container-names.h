/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Which container or pod a cgroup path belongs to, from the names the
 * runtimes give their cgroups: podman's libpod-<id>.scope, CRI-O's
 * crio-<id>.scope, containerd's cri-containerd-<id>.scope, Docker's
 * docker-<id>.scope (and their cgroupfs-driver forms), kubelet's
 * kubepods[-QOS]-pod<uid>.slice. Pure: status, explain, metrics and the
 * journal of the daemon and execguardctl name containers with it. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

enum container_runtime {
	CONTAINER_RUNTIME_NONE,
	CONTAINER_RUNTIME_PODMAN,
	CONTAINER_RUNTIME_CRIO,
	CONTAINER_RUNTIME_CONTAINERD,
	CONTAINER_RUNTIME_DOCKER,
	/* kubelet's cgroupfs driver names a container by its id alone */
	CONTAINER_RUNTIME_KUBERNETES,
};

enum pod_kind {
	POD_NONE,
	POD_GUARANTEED, /* a Kubernetes pod by QoS class */
	POD_BURSTABLE,
	POD_BESTEFFORT,
	POD_PODMAN,	/* a podman pod: machine-libpod_pod_<id>.slice */
};

#define CONTAINER_ID_MAX 64
#define POD_UID_MAX 64

struct container_ref {
	enum container_runtime runtime; /* NONE: in no container */
	bool monitor;			/* the runtime's monitor (conmon), not the container */
	char id[CONTAINER_ID_MAX + 1];	/* lower-case hex */
	size_t cgroup_len;		/* the container's cgroup: this prefix of the path */
	enum pod_kind pod;
	char pod_uid[POD_UID_MAX + 1];	/* Kubernetes: with "-" (the slice has "_") */
	size_t pod_len;			/* the pod's cgroup: this prefix of the path */
};

/* 1 when the path is in a container or a pod (ret says which), 0 when
 * not; never fails. Outermost container wins: its sub-cgroups are its. */
int container_ref_parse(const char *path, struct container_ref *ret);

const char *container_runtime_to_string(enum container_runtime r);
/* "guaranteed", "burstable", "besteffort", "podman", or "" */
const char *pod_kind_to_string(enum pod_kind k);

/* A short name for people: "podman 3f2a1b4c5d6e" (a short id, as the
 * runtimes' own tools show), "podman 3f2a1b4c5d6e (monitor)",
 * "pod 8c1e...-...(burstable)"; "" when ref names nothing. */
void container_ref_describe(const struct container_ref *ref, char *buf, size_t size);
