/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "container-names.h"
#include "util.h"

static bool is_hex_id(const char *s, size_t len)
{
	/* Runtimes use 64 hex digits; accept the short forms people type too. */
	if (len < 12 || len > CONTAINER_ID_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* A pod UID as a slice name carries it: hex and "_" (for "-"); kubelet's
 * cgroupfs driver keeps the "-". Static pods have a 32-digit hash. */
static bool is_pod_uid(const char *s, size_t len)
{
	if (len < 8 || len > POD_UID_MAX)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f') || s[i] == '_' || s[i] == '-'))
			return false;
	return true;
}

static bool starts(const char *s, size_t len, const char *prefix)
{
	size_t pl = strlen(prefix);

	return len >= pl && memcmp(s, prefix, pl) == 0;
}

static bool ends(const char *s, size_t len, const char *suffix)
{
	size_t sl = strlen(suffix);

	return len >= sl && memcmp(s + len - sl, suffix, sl) == 0;
}

static void set_pod_uid(struct container_ref *ref, const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		ref->pod_uid[i] = s[i] == '_' ? '-' : s[i];
	ref->pod_uid[len] = '\0';
}

/* "<prefix><id>[.scope]" with a hex id: the id's place, or false. */
static bool match_id(const char *c, size_t len, const char *prefix, const char **ret_id, size_t *ret_len)
{
	size_t pl = strlen(prefix);

	if (!starts(c, len, prefix))
		return false;
	c += pl;
	len -= pl;
	if (ends(c, len, ".scope"))
		len -= 6;
	if (!is_hex_id(c, len))
		return false;
	*ret_id = c;
	*ret_len = len;
	return true;
}

static const struct {
	const char *prefix;
	enum container_runtime runtime;
	bool monitor;
} container_prefixes[] = {
	/* the monitors' prefixes first: they are longer forms of the others */
	{ "libpod-conmon-", CONTAINER_RUNTIME_PODMAN, true },
	{ "libpod-", CONTAINER_RUNTIME_PODMAN, false },
	{ "crio-conmon-", CONTAINER_RUNTIME_CRIO, true },
	{ "crio-", CONTAINER_RUNTIME_CRIO, false },
	{ "cri-containerd-", CONTAINER_RUNTIME_CONTAINERD, false },
	{ "docker-", CONTAINER_RUNTIME_DOCKER, false },
};

/* One path component: a pod's level (kubepods slices, pod<uid>) or a
 * container's; true when it named the container (the walk stops). */
static bool parse_component(const char *c, size_t len, const char *prev, size_t prev_len, bool in_kubepods,
			    struct container_ref *ref)
{
	const char *id;
	size_t id_len;

	for (size_t i = 0; i < ELEMENTSOF(container_prefixes); i++)
		if (match_id(c, len, container_prefixes[i].prefix, &id, &id_len)) {
			ref->runtime = container_prefixes[i].runtime;
			ref->monitor = container_prefixes[i].monitor;
			memcpy(ref->id, id, id_len);
			ref->id[id_len] = '\0';
			return true;
		}
	/* cgroupfs drivers: /docker/<id>, and kubelet's /kubepods/.../pod<uid>/<id> */
	if (prev && ((prev_len == 6 && memcmp(prev, "docker", 6) == 0) || (ref->pod != POD_NONE && in_kubepods)) &&
	    len == CONTAINER_ID_MAX && is_hex_id(c, len)) {
		ref->runtime = prev_len == 6 && memcmp(prev, "docker", 6) == 0 ? CONTAINER_RUNTIME_DOCKER :
										  CONTAINER_RUNTIME_KUBERNETES;
		memcpy(ref->id, c, len);
		ref->id[len] = '\0';
		return true;
	}
	if (in_kubepods && ref->pod == POD_NONE) {
		static const struct {
			const char *prefix;
			enum pod_kind kind;
		} pods[] = {
			{ "kubepods-burstable-pod", POD_BURSTABLE },
			{ "kubepods-besteffort-pod", POD_BESTEFFORT },
			{ "kubepods-pod", POD_GUARANTEED },
		};
		bool cgroupfs = !ends(c, len, ".slice");
		size_t body = cgroupfs ? len : len - 6;

		for (size_t i = 0; !cgroupfs && i < ELEMENTSOF(pods); i++) {
			size_t pl = strlen(pods[i].prefix);

			if (starts(c, body, pods[i].prefix) && is_pod_uid(c + pl, body - pl)) {
				ref->pod = pods[i].kind;
				set_pod_uid(ref, c + pl, body - pl);
				return false;
			}
		}
		if (cgroupfs && starts(c, len, "pod") && is_pod_uid(c + 3, len - 3)) {
			/* /kubepods/pod<uid> is Guaranteed, /kubepods/burstable/pod<uid> not */
			ref->pod = prev_len == 9 && memcmp(prev, "burstable", 9) == 0	 ? POD_BURSTABLE :
				   prev_len == 10 && memcmp(prev, "besteffort", 10) == 0 ? POD_BESTEFFORT :
											   POD_GUARANTEED;
			set_pod_uid(ref, c + 3, len - 3);
		}
		return false;
	}
	if (ref->pod == POD_NONE && starts(c, len, "machine-libpod_pod_") && ends(c, len, ".slice") &&
	    is_hex_id(c + 19, len - 19 - 6)) {
		ref->pod = POD_PODMAN;
		memcpy(ref->pod_uid, c + 19, len - 19 - 6);
		ref->pod_uid[len - 19 - 6] = '\0';
	}
	return false;
}

int container_ref_parse(const char *path, struct container_ref *ret)
{
	struct container_ref ref = { 0 };
	const char *p = path, *prev = NULL;
	size_t prev_len = 0;
	bool in_kubepods = false;

	for (;;) {
		size_t len;
		enum pod_kind before = ref.pod;

		p += strspn(p, "/");
		if (!*p)
			break;
		len = strcspn(p, "/");
		if ((len == 14 && memcmp(p, "kubepods.slice", 14) == 0) || (len == 8 && memcmp(p, "kubepods", 8) == 0))
			in_kubepods = true;
		if (parse_component(p, len, prev, prev_len, in_kubepods, &ref)) {
			ref.cgroup_len = (size_t)(p + len - path);
			break;
		}
		if (ref.pod != before)
			ref.pod_len = (size_t)(p + len - path);
		prev = p;
		prev_len = len;
		p += len;
	}
	*ret = ref;
	return ref.runtime != CONTAINER_RUNTIME_NONE || ref.pod != POD_NONE;
}

const char *container_runtime_to_string(enum container_runtime r)
{
	static const char *const names[] = {
		[CONTAINER_RUNTIME_NONE] = "",
		[CONTAINER_RUNTIME_PODMAN] = "podman",
		[CONTAINER_RUNTIME_CRIO] = "cri-o",
		[CONTAINER_RUNTIME_CONTAINERD] = "containerd",
		[CONTAINER_RUNTIME_DOCKER] = "docker",
		[CONTAINER_RUNTIME_KUBERNETES] = "kubernetes",
	};

	return (size_t)r < ELEMENTSOF(names) ? names[r] : "";
}

const char *pod_kind_to_string(enum pod_kind k)
{
	static const char *const names[] = {
		[POD_NONE] = "",
		[POD_GUARANTEED] = "guaranteed",
		[POD_BURSTABLE] = "burstable",
		[POD_BESTEFFORT] = "besteffort",
		[POD_PODMAN] = "podman",
	};

	return (size_t)k < ELEMENTSOF(names) ? names[k] : "";
}

void container_ref_describe(const struct container_ref *ref, char *buf, size_t size)
{
	size_t o = 0;

	buf[0] = '\0';
	if (ref->runtime != CONTAINER_RUNTIME_NONE)
		o = (size_t)snprintf(buf, size, "%s %.12s%s", container_runtime_to_string(ref->runtime), ref->id,
				     ref->monitor ? " (monitor)" : "");
	if (ref->pod != POD_NONE && o < size)
		snprintf(buf + o, size - o, "%spod %s (%s)", o ? ", " : "", ref->pod_uid,
			 pod_kind_to_string(ref->pod));
}
