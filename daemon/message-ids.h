/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Every MESSAGE_ID execguardd logs, in one place: each made with
 * "systemd-id128 new" and explained in catalog/execguard.catalog (the
 * docs test checks both ways). Tests match on these, not on wording. */
#pragma once

/* the daemon started and is ready */
#define MID_STARTED "828ca2b1d17148729427a9684d5ad39a"
/* stopping: every protection it set is released */
#define MID_STOPPING "deb203f5dffb48f5a43f9f800a7a208f"
/* the policy was loaded or reloaded */
#define MID_POLICY_LOADED "7496597f136c46328e356b8b1861a266"
/* a policy with errors: FILE:LINE each */
#define MID_POLICY_REJECTED "f5c06f93b818408fa067d7776829830a"
/* a policy accepted, with something probably not meant: FILE:LINE */
#define MID_POLICY_WARNING "8abd626d67f340baba7bfee7e20cef09"
/* which backend protects, and why */
#define MID_BACKEND "ae47f6c999684d2d89235c509b74e9e4"
/* a process is protected (or would be) */
#define MID_PROCESS_PROTECTED "50b784bed84f4250a162468145a7454e"
/* memory.exec_protect set on a cgroup */
#define MID_CGROUP_PROTECTED "3ac5020a42c1419b9f43133f6ef64c51"
/* memory.exec_protect cleared */
#define MID_CGROUP_RELEASED "231a117629cb4d4688d80a7b831b586a"
/* memory.exec_protect could not be written */
#define MID_CGROUP_FAILED "f7e95756d618466089df0552534f5360"
/* proc connector events lost; rescanning */
#define MID_OVERFLOW "326ebaaed3ad491e813515c062095352"
/* no system bus, or the bus name not owned */
#define MID_BUS "fc4d5a4388f241a7b7289c0b26998572"
/* a unit file's [X-ExecGuard] section has errors */
#define MID_UNIT_SECTION_INVALID "9a4a01ad62584392ac81466311b03363"
/* reading units' sections from systemd: on, or failed for EXECGUARD_UNIT */
#define MID_UNIT_LOOKUP "b76dfe72c93c4efc87c23e5461e3c48e"
/* lock backend: a file not lockable, or cannot be opened */
#define MID_LOCK_SKIPPED "ce03c0fab0204417ac8eed8554222f11"
/* lock backend: a range over the global budget */
#define MID_LOCK_REFUSED "c9af7c06932d42f081a3abfc8a4ba504"
/* lock backend: gave back under memory pressure */
#define MID_LOCK_PRESSURE "e09ad4011cd8443281f7292085f86349"
/* lock backend: mlock() refused */
#define MID_LOCK_MLOCK_FAILED "3362eb49aa7d43a5ba17ef4342bb2299"
/* lock backend: a unit's figures */
#define MID_LOCK_SUMMARY "1a70be7815a34f32a1d17b71c4fffe62"
/* a process could not be looked at (EMFILE...): not protected */
#define MID_LOOK_FAILED "78f1e4aed68d47459ee37534a9f7796d"
/* a protected process is no longer protected (the policy, or a move) */
#define MID_PROCESS_RELEASED "93678903fb494c9fa2e2bf605b664349"
/* a tracked process moved to another cgroup: decided again */
#define MID_PROCESS_MOVED "42187769c2614cd180beb7ee52fb4c50"
/* the stats line (SIGUSR1, at exit) */
#define MID_STATS "6f50c2bd175c4c00944fb0958c340a93"
/* the proc connector failed, or could not be opened */
#define MID_CONNECTOR_FAILED "4b78cbb7e7754dc99ba64f63067a63f4"
/* the proc connector is unavailable: retrying every second */
#define MID_CONNECTOR_RETRYING "5095524880b944169aea2d309993e030"
/* the proc connector is back */
#define MID_CONNECTOR_BACK "b0dc2d58afa0498c90a92b49e8975515"
/* the bus name is owned */
#define MID_BUS_NAME "2552d8bbedb04de5826890304a5f8a39"
/* the system bus was lost */
#define MID_BUS_LOST "f8d48679467e40459a44f227ebc58a53"
/* connected to the system bus again */
#define MID_BUS_BACK "f5ac4a3df0454b4c86e6d6f13f7a7a55"
/* systemd is not on the system bus: no unit sections are read */
#define MID_UNIT_LOOKUP_OFF "e4a992da01c942a7b5de882177d171ca"
/* /proc rescanned after lost connector events */
#define MID_RESCANNED "4b522c33d39845109dea0e4eff86958a"
/* lock backend: a range over its units' budgets (LOCK_REFUSED: the global one) */
#define MID_LOCK_UNIT_REFUSED "8e068b3f31384954953ff64b58c6ba17"
/* lock backend: memory back, locking again after a give-back */
#define MID_LOCK_RELOCKED "437b87f546c74ac5a671ee690821e1cd"
/* lock backend: memory pressure cannot be watched as configured */
#define MID_LOCK_PRESSURE_WATCH "daa6d00067a943f3b1322022e25bc1ba"
/* a protected process could not be looked at again: it stays protected */
#define MID_LOOK_FAILED_KEPT "fe1f70dcafac45048606248a6f078fe3"
/* prewarm: a unit's record written (EXECGUARD_BYTES: recorded bytes) */
#define MID_PREWARM_RECORDED "633ce2139014494b931cd2d0c287fd72"
/* prewarm: a unit's record read back (EXECGUARD_BYTES: bytes read) */
#define MID_PREWARM_REPLAYED "3fd5015fffa94efd8ecb8c677a5eceeb"
/* prewarm: a recorded file changed since (EXECGUARD_EXE): its ranges dropped */
#define MID_PREWARM_INVALIDATED "898ec0cf19074293ae342029a8fe41b1"
/* prewarm: a record that cannot be parsed was dropped */
#define MID_PREWARM_RECORD_INVALID "bd9dc18f9c7344c29b43b40351e59b16"
/* prewarm: a replay stopped or skipped (memory short, budget spent) */
#define MID_PREWARM_SKIPPED "0384931a349e47f7aca1119604dfb242"
/* Protect=auto: a watched unit suffers and is protected (evidence in
 * EXECGUARD_FAULT_RATE, EXECGUARD_PSI_SOME, EXECGUARD_WINDOW_SEC,
 * EXECGUARD_BUDGET_LEFT, EXECGUARD_BYTES) */
#define MID_AUTO_PROTECTED "8ec1563ece604fc0a930b24276e89ecd"
/* Protect=auto: calm for AutoCalmSec=, released */
#define MID_AUTO_RELEASED "471d5413abf4453198eb3f9c62b0f1c7"
/* Protect=auto: a unit suffers but its text does not fit the budget left */
#define MID_AUTO_OVER_BUDGET "2f61a0531715406291da65cddca2c1f0"
/* Protect=auto: no text fault figures for a watched unit: it cannot be judged */
#define MID_AUTO_NO_FIGURES "b532a42b3ff54d66b05d5602ae0fd67b"
/* a cgroup protected as a whole (the push path): it appeared or its unit
 * started, and the policy protects it whatever runs there
 * (EXECGUARD_LATENCY_USEC: from the cgroup's creation) */
#define MID_PUSH_PROTECTED "a309d413061c425390fc1c3485dca667"
/* such a cgroup released: no process left in it (populated 0), its unit
 * stopped, or the policy no longer protects it */
#define MID_PUSH_RELEASED "dd752c56d5ae4aeebf849e8e954cd35e"
/* cgroups cannot be watched (inotify): protection of new ones is missed */
#define MID_PUSH_WATCH_FAILED "2b6ea5bca1454e7d8e9e0e9242cae4bc"
/* a container asked for protection by annotation (execguard-oci-hook): decided */
#define MID_CONTAINER_REQUEST "35feb3238329420bbda16ccfb18f12a8"
/* a container that asked has no process left: forgotten */
#define MID_CONTAINER_GONE "0103b50e81994386aba6ddc9950c690b"
/* execguard-oci-hook: what the daemon answered, or why it could not ask */
#define MID_OCI_HOOK "f2411b4e0566495687cce3f1055f14ad"
