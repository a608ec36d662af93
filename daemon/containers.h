/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Containers that asked for protection by annotation: execguard-oci-hook
 * passes a container's cgroup, its io.execguard.protect value and its
 * names over D-Bus (bus-containers.c); this table keeps them, answers
 * the decision for any process in such a cgroup (as a unit's own
 * [X-ExecGuard] section would, under [Daemon] ContainerAnnotations= and
 * ContainerProtectMax=), records them in the state directory so that a
 * restart keeps them, and forgets a container when its cgroup empties
 * (cgroup.events, inotify). It never calls the manager: it reports the
 * processes to decide through the callback it was given. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "policy.h"

typedef struct sd_event sd_event;
struct containers;

/* Names as the hook found them; NULL or "" when not known. */
struct container_labels {
	const char *runtime, *id, *name, *pod_uid, *pod_name, *pod_namespace;
};

struct container_entry {
	char *cgroup;	/* the container's cgroup, "/machine.slice/libpod-ID.scope" */
	char *request;	/* io.execguard.protect as asked */
	char *source;	/* what explain and the journal say decided */
	char *runtime, *id, *name, *pod_uid, *pod_name, *pod_namespace; /* "" unknown */
	struct rule_settings settings; /* under the [Daemon] settings of the last lookup */
	struct containers *owner;
	struct sd_event_source *watch;
	char state_file[32];
};

/* Decide again about a process of a container just added. */
typedef void (*containers_decide_fn)(void *userdata, pid_t pid);

/* cgroup_root: the cgroup2 mount (cgroup_root_fd opened on it);
 * state_dir_fd: where entries are recorded (-1: nowhere, as --dry-run). */
int containers_new(sd_event *e, const char *cgroup_root, int cgroup_root_fd, int state_dir_fd,
		   containers_decide_fn decide, void *userdata, struct containers **ret);
struct containers *containers_free(struct containers *c);

/* What an earlier run recorded, for containers still running (start). */
int containers_load(struct containers *c, const struct daemon_settings *d);

/* The hook's request. cgroup: the container's process's cgroup; the
 * container's own cgroup is taken from it (container-names.h). Returns
 * 1 protected, 0 not (the value says no, or ContainerAnnotations=no),
 * <0 on a bad request with *ret_why; *ret_summary (malloc'ed) says what
 * was decided, for the caller and the journal. */
int containers_protect(struct containers *c, const struct daemon_settings *d, const char *cgroup,
		       const char *value, const struct container_labels *l, char **ret_summary,
		       const char **ret_why);

/* The container a process in cgroup belongs to (its cgroup or an
 * ancestor's), with settings under d; NULL when none asked. */
const struct container_entry *containers_lookup(struct containers *c, const struct daemon_settings *d,
						const char *cgroup);
/* Fills in the unit-section part of in when cgroup is a container's
 * that asked (NULL c: nothing). True when it did. */
bool containers_policy_input(struct containers *c, const struct daemon_settings *d, const char *cgroup,
			     struct policy_input *in);

size_t containers_count(const struct containers *c);
/* Each entry; stops at a non-zero return. */
int containers_foreach(struct containers *c, int (*fn)(const struct container_entry *e, void *userdata),
		       void *userdata);

/* Pure parts (tests): the state file's text for e, and an entry from
 * such a text (the fields e owns are malloc'ed). */
int container_entry_format(const struct container_entry *e, char **ret);
int container_entry_parse(const char *buf, size_t len, struct container_entry *ret);
void container_entry_done(struct container_entry *e);
/* A label as the daemon takes it: printable ASCII, no space, at most 253
 * bytes (a DNS subdomain, Kubernetes' longest name); "" is fine. */
bool container_label_valid(const char *s);
