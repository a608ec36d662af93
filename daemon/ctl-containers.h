/* SPDX-License-Identifier: GPL-2.0-or-later */
/* execguardctl's names for containers and pods: from a cgroup path
 * (container-names.h) and from what annotated containers told the daemon
 * through execguard-oci-hook (ListContainers). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

typedef struct sd_bus sd_bus;
struct ctl_containers;

struct ctl_container_names {
	bool any;		/* in a container or pod */
	const char *runtime;	/* "podman", "cri-o"...; "" none */
	char id[65];		/* the container's full id; "" none */
	bool monitor;		/* the runtime's monitor (conmon) */
	char pod_uid[65];	/* "" none */
	const char *qos;	/* Kubernetes QoS class, "podman" for a podman pod, "" */
	/* From the annotations, "" when not known. */
	const char *name, *pod_name, *pod_namespace, *request;
};

/* What the daemon has (empty when it has none or predates containers);
 * only ENOMEM fails. */
int ctl_containers_load(sd_bus *bus, struct ctl_containers **ret);
struct ctl_containers *ctl_containers_free(struct ctl_containers *c);

/* Names for a cgroup path; c may be NULL (path alone). */
void ctl_container_names(const struct ctl_containers *c, const char *cgroup, struct ctl_container_names *ret);
/* "podman 3f2a1b4c5d6e (web), pod shop/web-0 8c1e... (burstable)";
 * "" when not in a container or pod. */
void ctl_container_describe(const struct ctl_container_names *n, char *buf, size_t size);
