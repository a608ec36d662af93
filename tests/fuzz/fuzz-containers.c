/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a container controls: the OCI state a runtime pipes to
 * execguard-oci-hook (annotations are the pod author's), cgroup names
 * (anyone's under delegation) and the daemon's record of a container. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "container-names.h"
#include "containers.h"
#include "oci-state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;
	struct oci_state s;
	struct container_entry e;
	struct container_ref ref;
	const char *why;
	char *path, desc[64];

	if (oci_state_parse(buf, size, &s, &why) == 0) {
		if (!s.id || s.pid <= 0)
			abort();
		oci_state_done(&s);
	}
	if (container_entry_parse(buf, size, &e) == 0) {
		if (!e.cgroup || e.cgroup[0] != '/' || !container_label_valid(e.request))
			abort();
		container_entry_done(&e);
	}
	path = malloc(size + 1);
	if (!path)
		return 0;
	memcpy(path, data, size);
	path[size] = '\0';
	if (container_ref_parse(path, &ref)) {
		if (ref.cgroup_len > strlen(path) || ref.pod_len > strlen(path) ||
		    strlen(ref.id) > CONTAINER_ID_MAX || strlen(ref.pod_uid) > POD_UID_MAX)
			abort();
		container_ref_describe(&ref, desc, sizeof(desc));
	}
	free(path);
	return 0;
}
