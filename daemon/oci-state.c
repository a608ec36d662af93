/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <json.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "oci-state.h"
#include "util.h"

static void json_putp(struct json_object **o)
{
	if (*o)
		json_object_put(*o);
}

/* A string member, copied; absent is fine, another type is not. */
static int take_string(struct json_object *obj, const char *key, char **ret)
{
	struct json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null))
		return 0;
	if (!json_object_is_type(v, json_type_string))
		return -EBADMSG;
	/* json-c accepts \u0000: a name with a NUL would be cut short silently */
	if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
		return -EBADMSG;
	*ret = strdup(json_object_get_string(v));
	return *ret ? 0 : -ENOMEM;
}

/* The first of the keys present in the annotations. */
static int take_annotation(struct json_object *ann, const char *const *keys, size_t n, char **ret)
{
	for (size_t i = 0; i < n && !*ret; i++) {
		int r = take_string(ann, keys[i], ret);

		if (r < 0)
			return r;
	}
	return 0;
}

static int parse_annotations(struct json_object *ann, struct oci_state *s)
{
	static const char *const pod_name[] = { "io.kubernetes.pod.name", "io.kubernetes.cri.sandbox-name" };
	static const char *const pod_ns[] = { "io.kubernetes.pod.namespace", "io.kubernetes.cri.sandbox-namespace" };
	static const char *const pod_uid[] = { "io.kubernetes.pod.uid", "io.kubernetes.cri.sandbox-uid" };
	static const char *const ctr[] = { "io.kubernetes.container.name", "io.kubernetes.cri.container-name" };
	int r;

	if (!json_object_is_type(ann, json_type_object))
		return -EBADMSG;
	r = take_string(ann, OCI_ANNOTATION_PROTECT, &s->protect);
	if (r >= 0)
		r = take_annotation(ann, pod_name, ELEMENTSOF(pod_name), &s->pod_name);
	if (r >= 0)
		r = take_annotation(ann, pod_ns, ELEMENTSOF(pod_ns), &s->pod_namespace);
	if (r >= 0)
		r = take_annotation(ann, pod_uid, ELEMENTSOF(pod_uid), &s->pod_uid);
	if (r >= 0)
		r = take_annotation(ann, ctr, ELEMENTSOF(ctr), &s->container_name);
	return r;
}

int oci_state_parse(const char *buf, size_t len, struct oci_state *ret, const char **ret_why)
{
	_cleanup_(json_putp) struct json_object *root = NULL;
	struct json_tokener *tok;
	struct json_object *v;
	struct oci_state s = { 0 };
	int64_t pid;
	int r;

	*ret = (struct oci_state){ 0 };
	if (len > OCI_STATE_MAX || len > INT_MAX) {
		*ret_why = "larger than 1 MiB";
		return -EBADMSG;
	}
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	root = json_tokener_parse_ex(tok, buf, (int)len);
	/* Exactly one JSON value, nothing but white space after it. */
	if (root && json_tokener_get_error(tok) == json_tokener_success) {
		size_t used = json_tokener_get_parse_end(tok);

		while (used < len && strchr(" \t\r\n", buf[used]) && buf[used])
			used++;
		if (used != len) {
			json_object_put(root);
			root = NULL;
		}
	}
	json_tokener_free(tok);
	if (!root) {
		*ret_why = "not one JSON value";
		return -EBADMSG;
	}
	if (!json_object_is_type(root, json_type_object)) {
		*ret_why = "not a JSON object";
		return -EBADMSG;
	}
	r = take_string(root, "id", &s.id);
	if (r >= 0 && !s.id)
		r = -EBADMSG;
	if (r < 0) {
		*ret_why = "no string \"id\"";
		goto fail;
	}
	if (!json_object_object_get_ex(root, "pid", &v) || !json_object_is_type(v, json_type_int) ||
	    (pid = json_object_get_int64(v)) <= 0 || pid > INT_MAX) {
		*ret_why = "no positive integer \"pid\" (a hook of a stage without a process?)";
		r = -EBADMSG;
		goto fail;
	}
	s.pid = (pid_t)pid;
	r = take_string(root, "status", &s.status);
	if (r < 0) {
		*ret_why = "\"status\" is not a string";
		goto fail;
	}
	if (json_object_object_get_ex(root, "annotations", &v) && !json_object_is_type(v, json_type_null)) {
		r = parse_annotations(v, &s);
		if (r < 0) {
			*ret_why = "\"annotations\" is not an object, or a value execguard reads there is not a string";
			goto fail;
		}
	}
	*ret = s;
	return 0;
fail:
	oci_state_done(&s);
	return r;
}

void oci_state_done(struct oci_state *s)
{
	free(s->id);
	free(s->status);
	free(s->protect);
	free(s->pod_name);
	free(s->pod_namespace);
	free(s->pod_uid);
	free(s->container_name);
	*s = (struct oci_state){ 0 };
}
