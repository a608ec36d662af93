/* SPDX-License-Identifier: GPL-2.0-or-later */
/* org.execguard.Containers1 on execguardd's object: ProtectCgroup, which
 * execguard-oci-hook calls at a container's creation (root only: sd-bus
 * asks the caller for CAP_SYS_ADMIN, the bus policy lets only root
 * send), and ListContainers, the names execguardctl shows. */
#include <systemd/sd-bus.h>

#include "bus-containers.h"
#include "bus-names.h"
#include "containers.h"
#include "manager-view.h"
#include "util.h"

/* The a{ss} of names the hook sends: runtime, id, name, pod_uid,
 * pod_name, pod_namespace; other keys are refused (a typo must not pass
 * silently). The strings point into msg. */
static int read_labels(sd_bus_message *msg, struct container_labels *l, sd_bus_error *error)
{
	const char *k, *v;
	int r;

	r = sd_bus_message_enter_container(msg, 'a', "{ss}");
	while (r >= 0 && (r = sd_bus_message_read(msg, "{ss}", &k, &v)) > 0) {
		if (streq(k, "runtime"))
			l->runtime = v;
		else if (streq(k, "id"))
			l->id = v;
		else if (streq(k, "name"))
			l->name = v;
		else if (streq(k, "pod_uid"))
			l->pod_uid = v;
		else if (streq(k, "pod_name"))
			l->pod_name = v;
		else if (streq(k, "pod_namespace"))
			l->pod_namespace = v;
		else
			return sd_bus_error_setf(error, EXECGUARD_BUS_ERROR_BAD_REQUEST,
						 "Unknown name \"%s\"; expected runtime, id, name, pod_uid, pod_name or pod_namespace",
						 k);
	}
	if (r >= 0)
		r = sd_bus_message_exit_container(msg);
	return r;
}

static int method_protect_cgroup(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;
	struct containers *c = manager_containers(m);
	struct container_labels l = { 0 };
	_cleanup_free_ char *summary = NULL;
	const char *cgroup, *value, *why = "";
	int r;

	r = sd_bus_message_read(msg, "ss", &cgroup, &value);
	if (r >= 0)
		r = read_labels(msg, &l, error);
	if (r < 0)
		return r;
	if (!c)
		return sd_bus_error_setf(error, SD_BUS_ERROR_NOT_SUPPORTED, "Containers are not followed (--dry-run?)");
	r = containers_protect(c, &manager_policy(m)->daemon, cgroup, value, &l, &summary, &why);
	if (r == -EINVAL || r == -ESRCH)
		return sd_bus_error_setf(error, EXECGUARD_BUS_ERROR_BAD_REQUEST, "%s: %s", cgroup, why);
	if (r < 0)
		return sd_bus_error_set_errnof(error, -r, "%s: %s", cgroup, why);
	return sd_bus_reply_method_return(msg, "bs", r > 0, strempty(summary));
}

static int append_entry(const struct container_entry *e, void *userdata)
{
	sd_bus_message *reply = userdata;

	return sd_bus_message_append(reply, "(sssssssss)", e->cgroup, e->request, e->runtime, e->id, e->name,
				     e->pod_uid, e->pod_namespace, e->pod_name, strempty(e->source));
}

static int method_list_containers(sd_bus_message *msg, void *userdata, sd_bus_error *error)
{
	struct manager *m = userdata;
	_cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
	int r;

	(void)error;
	r = sd_bus_message_new_method_return(msg, &reply);
	if (r >= 0)
		r = sd_bus_message_open_container(reply, 'a', "(sssssssss)");
	/* every field was checked printable ASCII on the way in: valid UTF-8 */
	if (r >= 0)
		r = containers_foreach(manager_containers(m), append_entry, reply);
	if (r >= 0)
		r = sd_bus_message_close_container(reply);
	if (r >= 0)
		r = sd_bus_send(NULL, reply, NULL);
	return r;
}

static const sd_bus_vtable containers_vtable[] = {
	SD_BUS_VTABLE_START(0),
	/* No UNPRIVILEGED flag: sd-bus asks for CAP_SYS_ADMIN. */
	SD_BUS_METHOD_WITH_NAMES("ProtectCgroup", "ssa{ss}", SD_BUS_PARAM(cgroup) SD_BUS_PARAM(value) SD_BUS_PARAM(names),
				 "bs", SD_BUS_PARAM(protect) SD_BUS_PARAM(summary), method_protect_cgroup, 0),
	SD_BUS_METHOD_WITH_NAMES("ListContainers", "", , "a(sssssssss)", SD_BUS_PARAM(containers),
				 method_list_containers, SD_BUS_VTABLE_UNPRIVILEGED),
	SD_BUS_VTABLE_END
};

int bus_containers_add(sd_bus *bus, struct manager *m)
{
	return sd_bus_add_object_vtable(bus, NULL, EXECGUARD_BUS_PATH, EXECGUARD_BUS_CONTAINERS_INTERFACE,
					containers_vtable, m);
}
