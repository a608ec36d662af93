# SPDX-License-Identifier: GPL-2.0
#
# Drop the kernel's OOM-kill reports from a console log, for vm-run.sh
# --allow-oom-kill: from "... invoked oom-killer:" to "... Killed process
# N", which the report ends with; at most 400 lines, so that a report cut
# short cannot hide what follows. Every other line is kept.
/invoked oom-killer:/ { skip = 1; n = 0 }
!skip { print }
skip && (/Killed process [0-9]+/ || ++n >= 400) { skip = 0 }
