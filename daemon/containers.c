/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <systemd/sd-event.h>

#include "cgroup.h"
#include "container-names.h"
#include "containers.h"
#include "hashmap.h"
#include "log.h"
#include "unit-files.h"
#include "util.h"

#define STATE_SUBDIR "containers"
/* A cgroup tree deeper than this below a container is not walked for its
 * processes (they are decided at their next exec or rescan). */
#define WALK_DEPTH 8
#define LABEL_MAX 253

struct containers {
	sd_event *event;
	char *cgroup_root;
	int cgroup_root_fd;
	int state_fd; /* STATE_SUBDIR, or -1 */
	containers_decide_fn decide;
	void *userdata;
	struct hashmap by_cgroup; /* entry->cgroup -> entry */
};

bool container_label_valid(const char *s)
{
	size_t n = 0;

	for (; *s; s++, n++)
		if (*s <= ' ' || *s > '~' || n >= LABEL_MAX)
			return false;
	return true;
}

/* A cgroup path the daemon takes from a caller: absolute, not the root,
 * printable, no "." or ".." (cgroup_relative()). */
static bool cgroup_path_valid(const char *s)
{
	const char *rel;

	if (s[0] != '/' || !s[strspn(s, "/")] || strlen(s) >= PATH_MAX - 32)
		return false;
	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < ' ' || *p == 0x7f)
			return false;
	return cgroup_relative(s, &rel) >= 0;
}

void container_entry_done(struct container_entry *e)
{
	free(e->cgroup);
	free(e->request);
	free(e->source);
	free(e->runtime);
	free(e->id);
	free(e->name);
	free(e->pod_uid);
	free(e->pod_name);
	free(e->pod_namespace);
	e->watch = sd_event_source_disable_unref(e->watch);
	*e = (struct container_entry){ 0 };
}

static void entry_free(struct container_entry *e)
{
	if (e) {
		container_entry_done(e);
		free(e);
	}
}

#define FIELDS(X)                       \
	X("cgroup", cgroup)             \
	X("request", request)           \
	X("runtime", runtime)           \
	X("id", id)                     \
	X("name", name)                 \
	X("pod_uid", pod_uid)           \
	X("pod_name", pod_name)         \
	X("pod_namespace", pod_namespace)

int container_entry_format(const struct container_entry *e, char **ret)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return -ENOMEM;
#define X(key, field) fprintf(f, "%s=%s\n", key, strempty(e->field));
	FIELDS(X)
#undef X
	if (fclose(f) != 0) {
		free(text);
		return -ENOMEM;
	}
	*ret = text;
	return 0;
}

int container_entry_parse(const char *buf, size_t len, struct container_entry *ret)
{
	struct container_entry e = { 0 };
	const char *p = buf, *end = buf + len;

	if (memchr(buf, '\0', len))
		return -EBADMSG;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p)), *eq;
		size_t l = nl ? (size_t)(nl - p) : (size_t)(end - p);
		bool known = false;

		eq = memchr(p, '=', l);
		if (!eq)
			goto bad;
#define X(key, field)                                                                        \
	if (!known && (size_t)(eq - p) == strlen(key) && memcmp(p, key, strlen(key)) == 0) { \
		if (e.field)                                                                 \
			goto bad;                                                            \
		e.field = memdup_str(eq + 1, l - (size_t)(eq - p) - 1);                      \
		if (!e.field) {                                                              \
			container_entry_done(&e);                                            \
			return -ENOMEM;                                                      \
		}                                                                            \
		known = true;                                                                \
	}
		FIELDS(X)
#undef X
		if (!known)
			goto bad;
		p += l + 1;
	}
	if (!e.cgroup || !e.request || !cgroup_path_valid(e.cgroup) || !*e.request)
		goto bad;
#define X(key, field)                                                                   \
	if (!e.field && !(e.field = strdup(""))) {                                      \
		container_entry_done(&e);                                               \
		return -ENOMEM;                                                         \
	}                                                                               \
	if (e.field != e.cgroup && !container_label_valid(e.field))                     \
		goto bad;
	FIELDS(X)
#undef X
	*ret = e;
	return 0;
bad:
	container_entry_done(&e);
	return -EBADMSG;
}

int containers_new(sd_event *e, const char *cgroup_root, int cgroup_root_fd, int state_dir_fd,
		   containers_decide_fn decide, void *userdata, struct containers **ret)
{
	struct containers *c = calloc(1, sizeof(*c));

	if (!c)
		return -ENOMEM;
	c->event = sd_event_ref(e);
	c->cgroup_root = strdup(cgroup_root);
	c->cgroup_root_fd = cgroup_root_fd;
	c->decide = decide;
	c->userdata = userdata;
	c->state_fd = -1;
	hashmap_init(&c->by_cgroup, hash_string, equal_string);
	if (!c->cgroup_root) {
		containers_free(c);
		return -ENOMEM;
	}
	if (state_dir_fd >= 0) {
		if (mkdirat(state_dir_fd, STATE_SUBDIR, 0700) < 0 && errno != EEXIST)
			log_warning_errno(-errno, "cannot make %s in the state directory: %m; containers' requests will not outlive a restart",
					  STATE_SUBDIR);
		c->state_fd = openat(state_dir_fd, STATE_SUBDIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	*ret = c;
	return 0;
}

struct containers *containers_free(struct containers *c)
{
	struct hashmap_entry *he = NULL;

	if (!c)
		return NULL;
	for (size_t i = 0; (he = hashmap_next(&c->by_cgroup, &i, he));)
		entry_free(he->value);
	hashmap_done(&c->by_cgroup);
	sd_event_unref(c->event);
	free(c->cgroup_root);
	closep(&c->state_fd);
	free(c);
	return NULL;
}

static void drop(struct containers *c, struct container_entry *e, const char *why)
{
	struct log_fields f = LOG_FIELDS_INIT;

	f.cgroup = e->cgroup;
	log_event(LOG_INFO, MID_CONTAINER_GONE, &f, "container %s%s%s: %s; forgotten", e->cgroup,
		  *e->name ? " " : "", e->name, why);
	hashmap_remove(&c->by_cgroup, e->cgroup);
	if (c->state_fd >= 0 && unlinkat(c->state_fd, e->state_file, 0) < 0 && errno != ENOENT)
		log_warning_errno(-errno, "cannot remove the record of container %s: %m", e->cgroup);
	entry_free(e);
}

/* 1 populated, 0 not, <0 gone or unreadable. */
static int cgroup_populated(struct containers *c, const char *cgroup)
{
	_cleanup_free_ char *path = NULL, *buf = NULL;
	const char *rel;
	size_t len;
	int r;

	if (cgroup_relative(cgroup, &rel) < 0 || asprintf(&path, "%s/cgroup.events", rel) < 0)
		return -ENOMEM;
	r = read_file_at(c->cgroup_root_fd, path, 4096, &buf, &len);
	if (r < 0)
		return r;
	for (const char *p = buf; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
		if (strncmp(p, "populated ", 10) == 0)
			return p[10] == '1';
	return -EBADMSG;
}

static int on_events(sd_event_source *s, const struct inotify_event *ev, void *userdata)
{
	struct container_entry *e = userdata;
	int r;

	(void)s;
	(void)ev;
	r = cgroup_populated(e->owner, e->cgroup);
	if (r <= 0)
		drop(e->owner, e, r == 0 ? "its cgroup has no process left" : "its cgroup is gone");
	return 0;
}

static int watch(struct containers *c, struct container_entry *e)
{
	_cleanup_free_ char *path = NULL;

	if (asprintf(&path, "%s%s/cgroup.events", c->cgroup_root, e->cgroup) < 0)
		return -ENOMEM;
	return sd_event_add_inotify(c->event, &e->watch, path, IN_MODIFY, on_events, e);
}

static void state_file_name(const char *cgroup, char *buf, size_t size)
{
	snprintf(buf, size, "c-%016llx", (unsigned long long)hash_string(cgroup));
}

static int record(struct containers *c, const struct container_entry *e)
{
	_cleanup_free_ char *text = NULL, *tmp = NULL;
	_cleanup_close_ int fd = -1;
	int r;

	if (c->state_fd < 0)
		return 0;
	r = container_entry_format(e, &text);
	if (r < 0)
		return r;
	if (asprintf(&tmp, ".%s.tmp", e->state_file) < 0)
		return -ENOMEM;
	fd = openat(c->state_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return -errno;
	/* /run is tmpfs: no fsync, a crash of the machine empties it anyway */
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text) ||
	    renameat(c->state_fd, tmp, c->state_fd, e->state_file) < 0) {
		r = -errno ?: -EIO;
		unlinkat(c->state_fd, tmp, 0);
		return r;
	}
	return 0;
}

/* The settings the entry gets under d; its source text for explain. */
static int entry_settings(struct container_entry *e, const struct daemon_settings *d, const char **ret_why)
{
	return policy_container_request(d, e->request, &e->settings, ret_why);
}

static int make_source(struct container_entry *e)
{
	struct container_ref ref;
	char who[160];

	container_ref_parse(e->cgroup, &ref);
	if (*e->pod_name || *e->name)
		snprintf(who, sizeof(who), "%s%s%s%s%s", *e->pod_namespace ? e->pod_namespace : "",
			 *e->pod_namespace ? "/" : "", *e->pod_name ? e->pod_name : "",
			 *e->pod_name && *e->name ? " " : "", e->name);
	else if (*e->id || ref.runtime != CONTAINER_RUNTIME_NONE)
		snprintf(who, sizeof(who), "%s %.12s", *e->runtime ? e->runtime : container_runtime_to_string(ref.runtime),
			 *e->id ? e->id : ref.id);
	else
		snprintf(who, sizeof(who), "%s", e->cgroup);
	free(e->source);
	return asprintf(&e->source, "annotation io.execguard.protect=%s (%s)", e->request, who) < 0 ? -ENOMEM : 0;
}

/* Every process in the container's cgroup tree: decided now, so that
 * the protection does not wait for the container's exec. */
static void decide_tree(struct containers *c, int dirfd, unsigned depth)
{
	_cleanup_free_ char *buf = NULL;
	DIR *d;
	struct dirent *de;
	size_t len;
	int dfd;

	if (read_file_at(dirfd, "cgroup.procs", 1 << 20, &buf, &len) >= 0)
		for (char *p = buf, *nl; p < buf + len; p = nl + 1) {
			long pid = strtol(p, &nl, 10);

			if (pid > 0 && c->decide)
				c->decide(c->userdata, (pid_t)pid);
			if (*nl != '\n')
				break;
		}
	if (depth >= WALK_DEPTH || (dfd = dup(dirfd)) < 0)
		return;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return;
	}
	while ((de = readdir(d)))
		if (de->d_type == DT_DIR && de->d_name[0] != '.') {
			_cleanup_close_ int sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

			if (sub >= 0)
				decide_tree(c, sub, depth + 1);
		}
	closedir(d);
}

static void decide_container(struct containers *c, const char *cgroup)
{
	const char *rel;
	_cleanup_close_ int fd = -1;

	if (cgroup_relative(cgroup, &rel) < 0)
		return;
	fd = openat(c->cgroup_root_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0)
		decide_tree(c, fd, 0);
}

/* Takes e (owned) into the table in place of an entry for its cgroup. */
static int add(struct containers *c, struct container_entry *e, const char **ret_why)
{
	struct container_entry *old = hashmap_get(&c->by_cgroup, e->cgroup);
	int r;

	e->owner = c;
	state_file_name(e->cgroup, e->state_file, sizeof(e->state_file));
	if (old) {
		hashmap_remove(&c->by_cgroup, old->cgroup);
		entry_free(old);
	}
	r = make_source(e);
	if (r >= 0) {
		r = watch(c, e);
		if (r == -ENOENT || r == -ENOTDIR) {
			*ret_why = "the container's cgroup does not exist (gone already?)";
			entry_free(e);
			return -ESRCH;
		}
	}
	if (r < 0) {
		*ret_why = "cannot watch its cgroup.events";
		entry_free(e);
		return r;
	}
	r = hashmap_put(&c->by_cgroup, e->cgroup, e);
	if (r < 0) {
		entry_free(e);
		return r;
	}
	/* Watched first, then read: an exit between the two is not missed. */
	r = cgroup_populated(c, e->cgroup);
	if (r <= 0) {
		drop(c, e, r == 0 ? "its cgroup has no process" : "its cgroup is gone");
		*ret_why = "the container's cgroup has no process (gone already)";
		return -ESRCH;
	}
	r = record(c, e);
	if (r < 0)
		log_warning_errno(r, "cannot record container %s in the state directory: %m; a restart of the daemon forgets it",
				  e->cgroup);
	return 0;
}

static char *dup_label(const char *s)
{
	return strdup(s ? s : "");
}

int containers_protect(struct containers *c, const struct daemon_settings *d, const char *cgroup,
		       const char *value, const struct container_labels *l, char **ret_summary,
		       const char **ret_why)
{
	struct container_entry *e, *old;
	struct log_fields f = LOG_FIELDS_INIT;
	struct container_ref ref;
	struct rule_settings s;
	char settings[128];
	int r, cut;

	*ret_summary = NULL;
	if (!cgroup_path_valid(cgroup)) {
		*ret_why = "not a cgroup2 path below the root";
		return -EINVAL;
	}
	if (!container_label_valid(value) || !*value) {
		*ret_why = "the value is empty or not printable ASCII";
		return -EINVAL;
	}
	{
		const char *v[] = { l->runtime, l->id, l->name, l->pod_uid, l->pod_name, l->pod_namespace };

		for (size_t i = 0; i < ELEMENTSOF(v); i++)
			if (v[i] && !container_label_valid(v[i])) {
				*ret_why = "a name is not printable ASCII without spaces, or longer than 253";
				return -EINVAL;
			}
	}
	cut = policy_container_request(d, value, &s, ret_why);
	if (cut == -EINVAL)
		return cut;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	/* The container's own cgroup, above crun's "container" leaf and
	 * whatever the container makes inside. */
	if (container_ref_parse(cgroup, &ref) && ref.runtime != CONTAINER_RUNTIME_NONE && !ref.monitor)
		e->cgroup = memdup_str(cgroup, ref.cgroup_len);
	else
		e->cgroup = strdup(cgroup);
	e->request = strdup(value);
	e->runtime = dup_label(l->runtime && *l->runtime ? l->runtime : container_runtime_to_string(ref.runtime));
	e->id = dup_label(l->id);
	e->name = dup_label(l->name);
	e->pod_uid = dup_label(l->pod_uid && *l->pod_uid ? l->pod_uid : ref.pod_uid);
	e->pod_name = dup_label(l->pod_name);
	e->pod_namespace = dup_label(l->pod_namespace);
	if (!e->cgroup || !e->request || !e->runtime || !e->id || !e->name || !e->pod_uid || !e->pod_name ||
	    !e->pod_namespace) {
		entry_free(e);
		return -ENOMEM;
	}
	f.cgroup = e->cgroup;
	if (cut < 0 || s.protect != 1) {
		/* Asked for no protection (or not allowed): nothing kept. */
		old = hashmap_get(&c->by_cgroup, e->cgroup);
		if (old)
			drop(c, old, "asked for no protection now");
		r = asprintf(ret_summary, "container %s not protected: %s", e->cgroup,
			     cut < 0 ? *ret_why : "io.execguard.protect says no");
		log_event(LOG_INFO, MID_CONTAINER_REQUEST, &f, "%s", r < 0 ? "container not protected" : *ret_summary);
		entry_free(e);
		return r < 0 ? -ENOMEM : 0;
	}
	r = add(c, e, ret_why);
	if (r < 0)
		return r;
	rule_settings_format(&s, settings, sizeof(settings));
	if (asprintf(ret_summary, "container %s: protect (%s%s)", e->cgroup, settings,
		     cut ? ", cut down to ContainerProtectMax=" : "") < 0)
		return -ENOMEM;
	f.policy = e->source;
	log_event(LOG_INFO, MID_CONTAINER_REQUEST, &f, "%s, %s", *ret_summary, e->source);
	decide_container(c, e->cgroup);
	return 1;
}

int containers_load(struct containers *c, const struct daemon_settings *d)
{
	DIR *dir;
	struct dirent *de;
	int fd, n = 0;

	(void)d;
	if (c->state_fd < 0 || (fd = dup(c->state_fd)) < 0)
		return 0;
	dir = fdopendir(fd);
	if (!dir) {
		close(fd);
		return -errno;
	}
	while ((de = readdir(dir))) {
		_cleanup_free_ char *buf = NULL;
		struct container_entry *e;
		const char *why = NULL;
		size_t len;

		if (strncmp(de->d_name, "c-", 2) != 0)
			continue;
		e = calloc(1, sizeof(*e));
		if (!e || read_file_at(c->state_fd, de->d_name, 64 * 1024, &buf, &len) < 0 ||
		    container_entry_parse(buf, len, e) < 0) {
			log_warning("state file %s/%s is not a container's record: removed", STATE_SUBDIR, de->d_name);
			free(e);
			unlinkat(c->state_fd, de->d_name, 0);
			continue;
		}
		if (add(c, e, &why) >= 0)
			n++;
		else /* its container is gone (or cannot be watched): not kept */
			unlinkat(c->state_fd, de->d_name, 0);
	}
	closedir(dir);
	if (n)
		log_info("%d container%s asked for protection before this start", n, n == 1 ? "" : "s");
	return n;
}

const struct container_entry *containers_lookup(struct containers *c, const struct daemon_settings *d,
						const char *cgroup)
{
	char buf[PATH_MAX];
	const char *why;
	size_t len = 0;

	if (!c || c->by_cgroup.n_items == 0 || !cgroup || strlen(cgroup) >= sizeof(buf))
		return NULL;
	while (cgroup_next_ancestor(cgroup, &len)) {
		struct container_entry *e;

		memcpy(buf, cgroup, len);
		buf[len] = '\0';
		e = hashmap_get(&c->by_cgroup, buf);
		if (e) {
			/* under the [Daemon] settings in force now (a reload changes them) */
			if (entry_settings(e, d, &why) < 0)
				e->settings = (struct rule_settings){ .protect = 0 };
			return e;
		}
	}
	return NULL;
}

bool containers_policy_input(struct containers *c, const struct daemon_settings *d, const char *cgroup,
			     struct policy_input *in)
{
	const struct container_entry *e = containers_lookup(c, d, cgroup);

	if (!e)
		return false;
	in->unit_section = &e->settings;
	in->unit_section_source = e->source;
	in->unit_section_kind = "annotation";
	return true;
}

size_t containers_count(const struct containers *c)
{
	return c ? c->by_cgroup.n_items : 0;
}

int containers_foreach(struct containers *c, int (*fn)(const struct container_entry *e, void *userdata),
		       void *userdata)
{
	struct hashmap_entry *he = NULL;

	if (!c)
		return 0;
	for (size_t i = 0; (he = hashmap_next(&c->by_cgroup, &i, he));) {
		int r = fn(he->value, userdata);

		if (r)
			return r;
	}
	return 0;
}
