#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""deploy/kubernetes/ holds what a node needs, checked field by field:
the manifest parses; the DaemonSet has hostPID and hostNetwork (the proc
connector serves only the initial pid and network namespaces), the node's
cgroup2 writable, the capabilities execguardd.service keeps (read from
units/execguardd.service.in) and no privileged mode, the policy from a
ConfigMap that execguardctl check-config accepts, the hook installed on
the node; metrics served for Prometheus (scrape annotations naming a
container port, and a scrape config that keeps the metrics' own pod,
namespace and container labels); the image is built from the .deb.
Prints "N passed, N failed"."""
import os
import re
import subprocess
import sys
import tempfile

try:
    import yaml
except ImportError:
    print("SKIP: python3-yaml (PyYAML) is not installed (tools/deps.sh test installs it)")
    sys.exit(77)

SRC = os.environ.get("SRC") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CTL = os.environ.get("EXECGUARDCTL")
K8S = os.path.join(SRC, "deploy", "kubernetes")
results = []


def check(what, cond, detail=""):
    results.append(bool(cond))
    print(("PASS: " if cond else "FAIL: ") + what + ("" if cond or not detail else f" ({detail})"))


with open(os.path.join(K8S, "execguard.yaml")) as f:
    docs = [d for d in yaml.safe_load_all(f) if d]
by_kind = {}
for d in docs:
    by_kind.setdefault(d["kind"], []).append(d)
check("execguard.yaml parses: Namespace, ConfigMap, DaemonSet",
      {"Namespace", "ConfigMap", "DaemonSet"} <= set(by_kind), sorted(by_kind))
ds = by_kind["DaemonSet"][0]
pod = ds["spec"]["template"]["spec"]
check("DaemonSet selector matches its pods' labels",
      ds["spec"]["selector"]["matchLabels"].items() <= ds["spec"]["template"]["metadata"]["labels"].items())
check("hostPID: true (the proc connector serves only the initial pid namespace)", pod.get("hostPID") is True)
check("hostNetwork: true (the proc connector is in the initial network namespace)", pod.get("hostNetwork") is True)

containers = {c["name"]: c for c in pod["containers"]}
daemon = containers.get("execguardd")
check("a container named execguardd", daemon is not None, sorted(containers))
volumes = {v["name"]: v for v in pod["volumes"]}
mounts = {m["mountPath"]: m for m in daemon.get("volumeMounts", [])}


def host_path(mount_path):
    m = mounts.get(mount_path)
    v = volumes.get(m["name"]) if m else None
    return v.get("hostPath", {}).get("path") if v else None


check("the node's cgroup2 at /sys/fs/cgroup, writable",
      host_path("/sys/fs/cgroup") == "/sys/fs/cgroup" and not mounts["/sys/fs/cgroup"].get("readOnly"))
check("the node's system bus (/run/dbus) for the hook and execguardctl", host_path("/run/dbus") == "/run/dbus")
check("/run/execguard on the node: a restarted pod keeps what it set and what containers asked",
      host_path("/run/execguard") == "/run/execguard")
cmd = daemon.get("command", [])
check("the daemon enters the node's cgroup namespace (paths as the node names them)",
      "--cgroup=/proc/1/ns/cgroup" in cmd and "/usr/sbin/execguardd" in cmd, cmd)

unit = open(os.path.join(SRC, "units", "execguardd.service.in")).read()
kept = set(re.search(r"^CapabilityBoundingSet=(.*)$", unit, re.M).group(1).split())
sc = daemon.get("securityContext", {})
caps = sc.get("capabilities", {})
added = {"CAP_" + c for c in caps.get("add", [])}
check("capabilities: all the unit keeps (" + " ".join(sorted(kept)) + ")", kept <= added, sorted(added))
check("capabilities: ALL dropped first, only SYS_ADMIN beyond the unit's (for nsenter)",
      caps.get("drop") == ["ALL"] and added - kept <= {"CAP_SYS_ADMIN"}, sorted(added - kept))
check("not privileged, no privilege escalation",
      not sc.get("privileged") and sc.get("allowPrivilegeEscalation") is False)

cm = {c["metadata"]["name"]: c for c in by_kind["ConfigMap"]}
pol = mounts.get("/etc/execguard.conf")
pol_vol = volumes.get(pol["name"]) if pol else None
cm_name = pol_vol.get("configMap", {}).get("name") if pol_vol else None
check("the policy is a ConfigMap mounted at /etc/execguard.conf",
      cm_name in cm and pol.get("subPath") in cm[cm_name]["data"], pol)
if CTL and cm_name in cm:
    with tempfile.TemporaryDirectory() as d:
        conf = os.path.join(d, "execguard.conf")
        with open(conf, "w") as f:
            f.write(cm[cm_name]["data"][pol["subPath"]])
        os.makedirs(os.path.join(d, "execguard.d"))
        # one empty drop-in: the policy alone, not the host's unit files
        empty = os.path.join(d, "none.conf")
        open(empty, "w").close()
        p = subprocess.run([CTL, "-c", conf, "check-config", empty], capture_output=True, text=True)
        check("execguardctl check-config accepts the ConfigMap's policy", p.returncode == 0, p.stdout + p.stderr)
        check("the policy honours annotations with a cap (ContainerProtectMax=)",
              re.search(r"^ContainerProtectMax=", cm[cm_name]["data"][pol["subPath"]], re.M))

init = {c["name"]: c for c in pod.get("initContainers", [])}
inst = init.get("install-node", {})
inst_mounts = {m["mountPath"] for m in inst.get("volumeMounts", [])}
check("an init container puts the hook, its hooks.d file and the D-Bus policy on the node",
      {"/host/opt/execguard", "/host/etc/containers/oci/hooks.d", "/host/etc/dbus-1/system.d"} <= inst_mounts
      and inst.get("command", [""])[0] == "/usr/share/execguard/kubernetes/node-install.sh", inst)

ann = ds["spec"]["template"]["metadata"].get("annotations", {})
ports = {p.get("name"): p["containerPort"] for c in pod["containers"] for p in c.get("ports", [])}
check("Prometheus scrape annotations name the metrics container's port",
      ann.get("prometheus.io/scrape") == "true" and int(ann.get("prometheus.io/port", 0)) == ports.get("metrics"),
      (ann, ports))
writer = " ".join(containers.get("metrics-writer", {}).get("command", []))
check("execguardctl metrics is written where the metrics container serves it",
      "execguardctl metrics --output=/metrics/" in writer and
      "--collector.textfile.directory=/metrics" in containers.get("metrics", {}).get("command", []))
with open(os.path.join(K8S, "prometheus-scrape.yaml")) as f:
    scrape = yaml.safe_load(f)["scrape_configs"][0]
check("the scrape config keeps the metrics' pod/namespace/container labels (honor_labels)",
      scrape.get("honor_labels") is True and any(r.get("action") == "keep" and r.get("regex") == "execguard"
                                                  for r in scrape["relabel_configs"]))

images = {c["image"] for c in pod["containers"] + pod.get("initContainers", [])}
version = subprocess.run(["dpkg-parsechangelog", "-l", os.path.join(SRC, "debian", "changelog"), "-S", "Version"],
                         capture_output=True, text=True).stdout.strip()
check(f"every container runs the image build-image.sh tags (execguard:{version})",
      images == {f"execguard:{version}"}, images)
cf = open(os.path.join(K8S, "Containerfile")).read()
check("the image is built from the .deb (tools/deb.sh) and has node-install.sh",
      re.search(r"^COPY build/deb/\$\{DEB\}", cf, re.M) and "apt-get install" in cf
      and "/usr/share/execguard/kubernetes/node-install.sh" in cf
      and "tools/deb.sh" in open(os.path.join(K8S, "build-image.sh")).read())

passed = sum(results)
print(f"{passed} passed, {len(results) - passed} failed")
sys.exit(0 if passed == len(results) else 1)
