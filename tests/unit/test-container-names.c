/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Container and pod names from the cgroup paths the runtimes make
 * (conf/examples/containers.conf has them), and the OCI state a hook
 * reads. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "container-names.h"
#include "oci-state.h"
#include "test.h"

#define ID64 "3f2a1b4c5d6e7f8091a2b3c4d5e6f708192a3b4c5d6e7f8091a2b3c4d5e6f708"
#define UID_ "8c1e7a52_9d0b_4f3e_a1b2_0c9d8e7f6a5b"
#define UID "8c1e7a52-9d0b-4f3e-a1b2-0c9d8e7f6a5b"

static void check_path(const char *path, int found, enum container_runtime rt, bool monitor, const char *id,
		       const char *container_cgroup, enum pod_kind pod, const char *pod_uid, const char *pod_cgroup)
{
	struct container_ref ref;

	CHECK_EQ_INT(container_ref_parse(path, &ref), found);
	CHECK_EQ_INT(ref.runtime, rt);
	CHECK_EQ_INT(ref.monitor, monitor);
	CHECK_STREQ(ref.id, id);
	CHECK_EQ_INT(ref.cgroup_len, container_cgroup ? strlen(container_cgroup) : 0);
	if (container_cgroup)
		CHECK(strncmp(path, container_cgroup, ref.cgroup_len) == 0);
	CHECK_EQ_INT(ref.pod, pod);
	CHECK_STREQ(ref.pod_uid, pod_uid);
	CHECK_EQ_INT(ref.pod_len, pod_cgroup ? strlen(pod_cgroup) : 0);
	if (pod_cgroup)
		CHECK(strncmp(path, pod_cgroup, ref.pod_len) == 0);
	if (!found || rt == CONTAINER_RUNTIME_NONE)
		return;
}

static void test_runtimes(void)
{
	/* podman as root, with crun's "container" leaf */
	check_path("/machine.slice/libpod-" ID64 ".scope/container", 1, CONTAINER_RUNTIME_PODMAN, false, ID64,
		   "/machine.slice/libpod-" ID64 ".scope", POD_NONE, "", NULL);
	check_path("/machine.slice/libpod-conmon-" ID64 ".scope", 1, CONTAINER_RUNTIME_PODMAN, true, ID64,
		   "/machine.slice/libpod-conmon-" ID64 ".scope", POD_NONE, "", NULL);
	/* rootless, in the user's manager */
	check_path("/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64 ".scope", 1,
		   CONTAINER_RUNTIME_PODMAN, false, ID64,
		   "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID64 ".scope", POD_NONE, "", NULL);
	/* podman's cgroupfs driver */
	check_path("/libpod_parent/libpod-" ID64, 1, CONTAINER_RUNTIME_PODMAN, false, ID64,
		   "/libpod_parent/libpod-" ID64, POD_NONE, "", NULL);
	/* a podman pod */
	check_path("/machine.slice/machine-libpod_pod_0123456789abcdef.slice/libpod-" ID64 ".scope/container", 1,
		   CONTAINER_RUNTIME_PODMAN, false, ID64,
		   "/machine.slice/machine-libpod_pod_0123456789abcdef.slice/libpod-" ID64 ".scope", POD_PODMAN,
		   "0123456789abcdef", "/machine.slice/machine-libpod_pod_0123456789abcdef.slice");
	check_path("/system.slice/docker-" ID64 ".scope", 1, CONTAINER_RUNTIME_DOCKER, false, ID64,
		   "/system.slice/docker-" ID64 ".scope", POD_NONE, "", NULL);
	check_path("/docker/" ID64 "/sub", 1, CONTAINER_RUNTIME_DOCKER, false, ID64, "/docker/" ID64, POD_NONE, "",
		   NULL);
	/* not containers */
	check_path("/system.slice/nginx.service", 0, CONTAINER_RUNTIME_NONE, false, "", NULL, POD_NONE, "", NULL);
	check_path("/", 0, CONTAINER_RUNTIME_NONE, false, "", NULL, POD_NONE, "", NULL);
	check_path("", 0, CONTAINER_RUNTIME_NONE, false, "", NULL, POD_NONE, "", NULL);
	check_path("/system.slice/libpod-xyz.scope", 0, CONTAINER_RUNTIME_NONE, false, "", NULL, POD_NONE, "", NULL);
	check_path("/system.slice/docker-0123.scope", 0, CONTAINER_RUNTIME_NONE, false, "", NULL, POD_NONE, "", NULL);
	check_path("/x/" ID64, 0, CONTAINER_RUNTIME_NONE, false, "", NULL, POD_NONE, "", NULL);
}

static void test_kubernetes(void)
{
	/* systemd driver, one per QoS class and runtime */
	check_path("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID64 ".scope", 1,
		   CONTAINER_RUNTIME_CONTAINERD, false, ID64,
		   "/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID64 ".scope", POD_GUARANTEED, UID,
		   "/kubepods.slice/kubepods-pod" UID_ ".slice");
	check_path("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-" ID64
		   ".scope/x", 1, CONTAINER_RUNTIME_CRIO, false, ID64,
		   "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/crio-" ID64 ".scope",
		   POD_BURSTABLE, UID, "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice");
	check_path("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-conmon-" ID64
		   ".scope", 1, CONTAINER_RUNTIME_CRIO, true, ID64,
		   "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice/crio-conmon-" ID64
		   ".scope", POD_BESTEFFORT, UID,
		   "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_ ".slice");
	/* a pod's own slice, no container */
	check_path("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice", 1,
		   CONTAINER_RUNTIME_NONE, false, "", NULL, POD_BURSTABLE, UID,
		   "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice");
	/* cgroupfs driver: pod<uid> with dashes, the container by id alone */
	check_path("/kubepods/burstable/pod" UID "/" ID64, 1, CONTAINER_RUNTIME_KUBERNETES, false, ID64,
		   "/kubepods/burstable/pod" UID "/" ID64, POD_BURSTABLE, UID, "/kubepods/burstable/pod" UID);
	check_path("/kubepods/pod" UID "/" ID64, 1, CONTAINER_RUNTIME_KUBERNETES, false, ID64,
		   "/kubepods/pod" UID "/" ID64, POD_GUARANTEED, UID, "/kubepods/pod" UID);
	check_path("/kubepods.slice", 0, CONTAINER_RUNTIME_NONE, false, "", NULL, POD_NONE, "", NULL);
	/* a pod slice outside kubepods is someone else's name */
	check_path("/other.slice/kubepods-pod" UID_ ".slice", 0, CONTAINER_RUNTIME_NONE, false, "", NULL, POD_NONE, "",
		   NULL);
}

static void test_describe(void)
{
	struct container_ref ref;
	char buf[200];

	container_ref_parse("/machine.slice/libpod-" ID64 ".scope/container", &ref);
	container_ref_describe(&ref, buf, sizeof(buf));
	CHECK_STREQ(buf, "podman 3f2a1b4c5d6e");
	container_ref_parse("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID64 ".scope", &ref);
	container_ref_describe(&ref, buf, sizeof(buf));
	CHECK_STREQ(buf, "containerd 3f2a1b4c5d6e, pod " UID " (guaranteed)");
	container_ref_parse("/machine.slice/libpod-conmon-" ID64 ".scope", &ref);
	container_ref_describe(&ref, buf, sizeof(buf));
	CHECK_STREQ(buf, "podman 3f2a1b4c5d6e (monitor)");
	container_ref_parse("/system.slice/a.service", &ref);
	container_ref_describe(&ref, buf, sizeof(buf));
	CHECK_STREQ(buf, "");
	/* a small buffer is cut, never overrun */
	container_ref_parse("/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID64 ".scope", &ref);
	container_ref_describe(&ref, buf, 10);
	CHECK_EQ_INT(strlen(buf), 9);
}

static int parse(const char *json, struct oci_state *s, const char **why)
{
	return oci_state_parse(json, strlen(json), s, why);
}

static void test_oci_state(void)
{
	struct oci_state s;
	const char *why = NULL;

	/* podman/crun at createRuntime */
	CHECK_EQ_INT(parse("{\"ociVersion\":\"1.0.2-dev\",\"id\":\"" ID64 "\",\"status\":\"created\",\"pid\":4242,"
			   "\"bundle\":\"/var/lib/containers/x\",\"annotations\":{\"io.execguard.protect\":\"64M\","
			   "\"io.container.manager\":\"libpod\",\"org.opencontainers.image.stopSignal\":\"15\"}}\n",
			   &s, &why),
		     0);
	CHECK_STREQ(s.id, ID64);
	CHECK_EQ_INT(s.pid, 4242);
	CHECK_STREQ(s.status, "created");
	CHECK_STREQ(s.protect, "64M");
	CHECK(!s.pod_name && !s.pod_namespace && !s.pod_uid && !s.container_name);
	oci_state_done(&s);
	/* CRI-O's names */
	CHECK_EQ_INT(parse("{\"id\":\"a\",\"pid\":1,\"annotations\":{\"io.execguard.protect\":\"yes\","
			   "\"io.kubernetes.pod.name\":\"web-0\",\"io.kubernetes.pod.namespace\":\"shop\","
			   "\"io.kubernetes.pod.uid\":\"" UID "\",\"io.kubernetes.container.name\":\"nginx\"}}",
			   &s, &why),
		     0);
	CHECK_STREQ(s.pod_name, "web-0");
	CHECK_STREQ(s.pod_namespace, "shop");
	CHECK_STREQ(s.pod_uid, UID);
	CHECK_STREQ(s.container_name, "nginx");
	oci_state_done(&s);
	/* containerd's CRI names */
	CHECK_EQ_INT(parse("{\"id\":\"a\",\"pid\":7,\"annotations\":{\"io.execguard.protect\":\"max\","
			   "\"io.kubernetes.cri.sandbox-name\":\"db-1\",\"io.kubernetes.cri.sandbox-namespace\":\"data\","
			   "\"io.kubernetes.cri.sandbox-uid\":\"" UID "\",\"io.kubernetes.cri.container-name\":\"pg\","
			   "\"io.kubernetes.cri.container-type\":\"container\"}}",
			   &s, &why),
		     0);
	CHECK_STREQ(s.pod_name, "db-1");
	CHECK_STREQ(s.pod_namespace, "data");
	CHECK_STREQ(s.container_name, "pg");
	oci_state_done(&s);
	/* no annotations at all: fine, nothing asked */
	CHECK_EQ_INT(parse("{\"id\":\"a\",\"pid\":7}", &s, &why), 0);
	CHECK(!s.protect);
	oci_state_done(&s);
	/* refused, each with a reason */
	static const char *const bad[] = {
		"",
		"[]",
		"{\"pid\":1}",
		"{\"id\":5,\"pid\":1}",
		"{\"id\":\"a\"}",
		"{\"id\":\"a\",\"pid\":0}",
		"{\"id\":\"a\",\"pid\":-3}",
		"{\"id\":\"a\",\"pid\":\"12\"}",
		"{\"id\":\"a\",\"pid\":99999999999}",
		"{\"id\":\"a\",\"pid\":1.5}",
		"{\"id\":\"a\",\"pid\":1,\"annotations\":[]}",
		"{\"id\":\"a\",\"pid\":1,\"annotations\":{\"io.execguard.protect\":1}}",
		"{\"id\":\"a\",\"pid\":1,\"annotations\":{\"io.execguard.protect\":\"y\\u0000es\"}}",
		"{\"id\":\"a\",\"pid\":1} {}",
		"{\"id\":\"a\",\"pid\":1",
		"{\"id\":\"a\",\"pid\":1,\"status\":true}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		if (parse(bad[i], &s, &why) != -EBADMSG || !why) {
			fprintf(stderr, "accepted: %s\n", bad[i]);
			CHECK(0);
		}
		CHECK(!s.id && !s.protect);
	}
}

TEST_MAIN(test_runtimes, test_kubernetes, test_describe, test_oci_state)
