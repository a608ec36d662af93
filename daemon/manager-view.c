/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the D-Bus interface reads of the manager (manager-view.h). */
#include "cgroup.h"
#include "containers.h"
#include "manager-push.h"
#include "manager-state.h"
#include "manager-view.h"

sd_event *manager_event(struct manager *m)
{
	return m->event;
}

int manager_cgroup_root_fd(struct manager *m)
{
	return m->cgroup_root_fd;
}

int manager_proc_fd(struct manager *m)
{
	return m->proc_fd;
}

struct text_faults *manager_text_faults(struct manager *m)
{
	return m->text_faults;
}

const struct policy *manager_policy(struct manager *m)
{
	return &m->policy;
}

const struct backend_ops *manager_backend(struct manager *m, void **ret_state)
{
	if (ret_state)
		*ret_state = m->backend;
	return m->backend_ops;
}

bool manager_dry_run(const struct manager *m)
{
	return m->args.dry_run;
}

int manager_foreach_process(struct manager *m, manager_process_fn fn, void *userdata)
{
	struct hashmap_entry *e = NULL;
	size_t i = 0;

	while ((e = hashmap_next(&m->procs, &i, e))) {
		const struct tracked *t = e->value;
		struct manager_process_info p = {
			.pid = t->pid,
			.exe = t->exe,
			.cgroup = t->cgroup,
			.unit = t->unit,
			.source = t->source,
			.source_kind = t->source_kind,
			.exec_bytes = t->exec_bytes,
		};
		int r = fn(&p, userdata);

		if (r != 0)
			return r;
	}
	return 0;
}

int manager_explain(struct manager *m, pid_t pid, struct manager_explanation *ret)
{
	struct look l;
	struct policy_input in;
	int r;

	*ret = (struct manager_explanation){ .pid = pid };
	r = look_at(m->proc_fd, pid, &l);
	if (r == 0)
		r = look_at_exe(&l);
	if (r < 0) {
		look_done(&l);
		return r;
	}
	if (m->systemd) {
		_cleanup_free_ char *sd_unit = NULL;

		/* Decisions take the unit from the cgroup path; a person asking
		 * why should hear if systemd sees it otherwise. */
		if (cgroup_unit_of(pid, l.cgroup, true, &sd_unit) >= 0 && !streq_ptr(sd_unit, l.unit))
			log_warning("pid %d: systemd puts it in unit %s, its cgroup path %s says %s; "
				    "decisions use the path",
				    (int)pid, sd_unit, l.cgroup, strna(l.unit));
	}
	in = (struct policy_input){ .unit = l.unit, .cgroup = l.cgroup, .exe = l.exe };
	if (l.unit && m->unit_settings) {
		r = m->unit_settings(m->unit_settings_userdata, l.unit, 0, 0, &ret->unit_section,
				     &ret->unit_section_source);
		if (r > 0 && r != UNIT_SETTINGS_PENDING)
			in.unit_section = &ret->unit_section;
		ret->unit_section_pending = r == UNIT_SETTINGS_PENDING;
	}
	in.unit_section_source = ret->unit_section_source;
	if (!in.unit_section && containers_policy_input(m->containers, &m->policy.daemon, l.cgroup, &in)) {
		ret->unit_section = *in.unit_section;
		free(ret->unit_section_source);
		ret->unit_section_source = strdup(in.unit_section_source);
	}
	policy_decide(&m->policy, &in, &ret->decision);
	/* Protect=auto: what the engine decided is the decision. */
	if (ret->decision.watch &&
	    manager_auto_describe(m, l.unit ?: l.cgroup, ret->auto_state, sizeof(ret->auto_state)) > 0)
		ret->decision.protect = true;
	ret->tracked = hashmap_get(&m->procs, INT_TO_KEY(pid)) != NULL || push_protects(m, l.cgroup);
	ret->exe = TAKE_PTR(l.exe);
	ret->cgroup = TAKE_PTR(l.cgroup);
	ret->unit = TAKE_PTR(l.unit);
	look_done(&l);
	return 0;
}

void manager_explanation_done(struct manager_explanation *e)
{
	free(e->exe);
	free(e->cgroup);
	free(e->unit);
	free(e->unit_section_source);
}

struct containers *manager_containers(struct manager *m)
{
	return m->containers;
}

struct prewarm *manager_prewarm(struct manager *m)
{
	return m->prewarm;
}
