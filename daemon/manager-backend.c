/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Two start steps of the manager (manager.h): which backend protects
 * (Backend=auto tries them in order), and the capabilities it needs,
 * the rest dropped. */
#include "caps.h"
#include "manager-auto.h"
#include "manager-backend.h"

int manager_pick_backend(struct manager *m)
{
	static const enum backend_choice order[] = { BACKEND_KERNEL, BACKEND_LOCK };
	enum backend_choice want = m->args.backend_override >= 0 ?
					   (enum backend_choice)m->args.backend_override :
					   m->policy.daemon.backend;
	struct log_fields f = LOG_FIELDS_INIT;
	int r;

	m->env = (struct backend_env){
		.state_dir_fd = m->state_dir_fd,
		.cgroup_root_fd = m->cgroup_root_fd,
		.cgroup_root = m->cgroup_root,
		.proc_fd = m->proc_fd,
		.dry_run = m->args.dry_run,
		.event = m->event,
		.settings = &m->policy.daemon,
	};
	if (want == BACKEND_AUTO) {
		for (size_t i = 0; i < ELEMENTSOF(order) && !m->backend_ops; i++) {
			const struct backend_ops *ops = backend_ops_for(order[i]);
			char *why = NULL;

			if (!ops)
				continue;
			if (ops->probe(&m->env, &why) == 0)
				m->backend_ops = ops;
			else
				log_info("backend %s not usable: %s", ops->name, strna(why));
			free(why);
		}
		if (!m->backend_ops) {
			log_warning("no protecting backend works here; observing only (backend none)");
			m->backend_ops = &backend_none_ops;
		}
	} else {
		char *why = NULL;

		m->backend_ops = backend_ops_for(want);
		if (!m->backend_ops) {
			log_error("backend %s is not built into this execguardd",
				  backend_choice_to_string(want));
			return -EOPNOTSUPP;
		}
		r = m->backend_ops->probe(&m->env, &why);
		if (r < 0) {
			log_error("backend %s cannot work here: %s", m->backend_ops->name,
				  why ? why : STRERROR(r));
			free(why);
			return r;
		}
		free(why);
	}
	r = m->backend_ops->create(&m->env, &m->backend);
	if (r < 0)
		return log_error_errno(r, "cannot set up backend %s: %m", m->backend_ops->name);
	m->backend_choice = want;
	r = auto_setup(m);
	if (r < 0)
		return r;
	f.backend = m->backend_ops->name;
	log_event(LOG_INFO, MID_BACKEND, &f, "backend %s%s, cgroup2 at %s", m->backend_ops->name,
		  m->args.dry_run ? " (dry run: nothing is changed)" : "", m->cgroup_root);
	return 0;
}

int manager_drop_privileges(struct manager *m)
{
	uint64_t want = CAPS_COMMON | m->backend_ops->capabilities, kept = 0, had = 0;
	char k[512], d[1024];
	int bounding = 0, r;

	(void)caps_get_effective(&had);
	r = caps_keep_only(want, &kept, &bounding);
	if (r < 0) {
		/* Less safe, not broken: say so and go on. */
		log_warning_errno(r, "cannot drop capabilities: %m%s; keeping %s",
			    r == -EPERM ? " (a system call filter without capset?)" : "",
			    caps_format(had, d, sizeof(d)));
		return 0;
	}
	log_info("capabilities for backend %s: kept %s; dropped %s%s", m->backend_ops->name,
		 caps_format(kept, k, sizeof(k)), caps_format(had & ~kept, d, sizeof(d)),
		 bounding ? " (bounding set too)" : " (bounding set as the service manager set it)");
	if (want & ~kept)
		log_notice("started without %s: what needs it will fail and say so",
			   caps_format(want & ~kept, d, sizeof(d)));
	return 0;
}
