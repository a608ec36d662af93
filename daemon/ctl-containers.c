/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>

#include "bus-names.h"
#include "container-names.h"
#include "ctl-containers.h"
#include "util.h"

struct ctl_entry {
	const char *cgroup, *request, *runtime, *id, *name, *pod_uid, *pod_namespace, *pod_name, *source;
};

struct ctl_containers {
	sd_bus_message *reply; /* the entries' strings point into it */
	struct ctl_entry *v;
	size_t n;
};

int ctl_containers_load(sd_bus *bus, struct ctl_containers **ret)
{
	struct ctl_containers *c = calloc(1, sizeof(*c));
	struct ctl_entry e;
	int r;

	if (!c)
		return -ENOMEM;
	*ret = c;
	/* an older daemon, or none: names from the paths alone */
	if (sd_bus_call_method(bus, EXECGUARD_BUS_NAME, EXECGUARD_BUS_PATH, EXECGUARD_BUS_CONTAINERS_INTERFACE,
			       "ListContainers", NULL, &c->reply, NULL) < 0)
		return 0;
	r = sd_bus_message_enter_container(c->reply, 'a', "(sssssssss)");
	while (r >= 0 && (r = sd_bus_message_read(c->reply, "(sssssssss)", &e.cgroup, &e.request, &e.runtime, &e.id,
						  &e.name, &e.pod_uid, &e.pod_namespace, &e.pod_name, &e.source)) > 0) {
		struct ctl_entry *v = realloc(c->v, (c->n + 1) * sizeof(*v));

		if (!v)
			return -ENOMEM;
		c->v = v;
		c->v[c->n++] = e;
	}
	return 0;
}

struct ctl_containers *ctl_containers_free(struct ctl_containers *c)
{
	if (c) {
		sd_bus_message_unref(c->reply);
		free(c->v);
		free(c);
	}
	return NULL;
}

/* cgroup is e's or below it */
static bool within(const char *cgroup, const char *top)
{
	size_t l = strlen(top);

	return strncmp(cgroup, top, l) == 0 && (cgroup[l] == '\0' || cgroup[l] == '/');
}

void ctl_container_names(const struct ctl_containers *c, const char *cgroup, struct ctl_container_names *ret)
{
	struct container_ref ref;

	*ret = (struct ctl_container_names){ .runtime = "", .qos = "", .name = "", .pod_name = "",
					     .pod_namespace = "", .request = "" };
	if (!cgroup)
		return;
	ret->any = container_ref_parse(cgroup, &ref) > 0;
	ret->runtime = container_runtime_to_string(ref.runtime);
	snprintf(ret->id, sizeof(ret->id), "%s", ref.id);
	ret->monitor = ref.monitor;
	snprintf(ret->pod_uid, sizeof(ret->pod_uid), "%s", ref.pod_uid);
	ret->qos = pod_kind_to_string(ref.pod);
	for (size_t i = 0; c && i < c->n; i++) {
		const struct ctl_entry *e = &c->v[i];

		if (!within(cgroup, e->cgroup))
			continue;
		ret->any = true;
		if (*e->runtime)
			ret->runtime = e->runtime;
		if (*e->id)
			snprintf(ret->id, sizeof(ret->id), "%s", e->id);
		if (*e->pod_uid)
			snprintf(ret->pod_uid, sizeof(ret->pod_uid), "%s", e->pod_uid);
		ret->name = e->name;
		ret->pod_name = e->pod_name;
		ret->pod_namespace = e->pod_namespace;
		ret->request = e->request;
		break;
	}
}

void ctl_container_describe(const struct ctl_container_names *n, char *buf, size_t size)
{
	size_t o = 0;

#define ADD(...)                                                                    \
	do {                                                                        \
		if (o < size)                                                       \
			o += (size_t)snprintf(buf + o, size - o, __VA_ARGS__);      \
	} while (0)
	buf[0] = '\0';
	if (!n->any)
		return;
	if (*n->id)
		ADD("%s %.12s", *n->runtime ? n->runtime : "container", n->id);
	if (*n->name)
		ADD("%s(%s)", o ? " " : "", n->name);
	if (n->monitor)
		ADD("%s(monitor)", o ? " " : "");
	if (*n->pod_name || *n->pod_uid) {
		ADD("%spod", o ? ", " : "");
		if (*n->pod_name)
			ADD(" %s%s%s", n->pod_namespace, *n->pod_namespace ? "/" : "", n->pod_name);
		if (*n->pod_uid)
			ADD(" %s", n->pod_uid);
		if (*n->qos)
			ADD(" (%s)", n->qos);
	}
	if (*n->request)
		ADD("%sannotation io.execguard.protect=%s", o ? ", " : "", n->request);
#undef ADD
}
