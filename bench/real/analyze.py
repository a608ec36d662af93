#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Tables and plots of bench/real's runs.

    analyze.py OUT [--plot-shape SHAPE]

OUT is a results directory of bench/real/run.sh (OUT/LRU/SERVICE/SHAPE/
MODE-REP/). Writes OUT/results.md (per cell: medians over runs with a 95%
confidence interval of the median, and the targets of issues 29 and 36),
OUT/runs.csv (one line per run) and OUT/cdf-SERVICE.png (the latency CDF
per mode, requests of all runs of a cell pooled). Prints where it wrote.
"""
import csv
import glob
import gzip
import math
import os
import statistics
import sys
from collections import defaultdict

MODE_ORDER = ["none", "lowmax", "low", "min", "lock", "mlockall", "ttl250", "ttl1000", "ttl5000",
              "epmax", "epbound", "eptext", "epttl"]
MODE_NAME = {
    "none": "none", "lowmax": "memory.low=max", "low": "memory.low=ws", "min": "memory.min=ws",
    "lock": "execguardd lock", "mlockall": "mlockall preload", "ttl250": "min_ttl_ms=250",
    "ttl1000": "min_ttl_ms=1000", "ttl5000": "min_ttl_ms=5000", "epmax": "exec_protect=max",
    "epbound": "exec_protect=bound", "eptext": "exec_protect=text", "epttl": "exec_protect+min_ttl 1000",
}
SHAPE_ORDER = ["unloaded", "moderate", "severe", "slice", "spike"]
SERVICE_ORDER = ["pgro", "pgtpcb", "nginx", "cgi", "py"]
SERVICE_NAME = {"pgro": "PostgreSQL select-only", "pgtpcb": "PostgreSQL TPC-B-like",
                "nginx": "nginx static", "cgi": "nginx + fcgiwrap CGI (sh, openssl, head per request)",
                "py": "Python HTTP API with C extensions (pysvc.py)"}
SLOW_MS = 20.0
HZ = 100.0  # USER_HZ of /proc/stat and /proc/PID/stat


def opentext(path):
    """path, or path.gz as inside.sh leaves the raw data."""
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        return gzip.open(path + ".gz", "rt")
    if path.endswith(".gz"):
        return gzip.open(path, "rt")
    return open(path)


def kv(path):
    d = {}
    try:
        with open(path) as f:
            for line in f:
                if "=" in line:
                    k, v = line.rstrip("\n").split("=", 1)
                    d[k] = v
    except OSError:
        pass
    return d


def stat_file(path, conv=int):
    """A "key value" file (memory.events, hog.out); {} if unreadable."""
    d = {}
    try:
        with open(path) as f:
            for line in f:
                p = line.split()
                if len(p) == 2:
                    d[p[0]] = conv(p[1])
    except (OSError, ValueError):
        pass
    return d


def requests_of(d, svc):
    """(start, end, latency ms) of every request of the measured phase."""
    out = []
    if svc.startswith("pg"):
        for p in glob.glob(os.path.join(d, "pgbench-*")):
            with opentext(p) as f:
                for line in f:
                    x = line.split()
                    if len(x) < 6 or x[2] == "skipped":
                        continue
                    lat = int(x[2]) / 1000.0
                    end = int(x[4]) + int(x[5]) / 1e6
                    out.append((end - lat / 1000.0, end, lat))
    else:
        p = os.path.join(d, "access.log")
        if os.path.exists(p) or os.path.exists(p + ".gz"):
            with opentext(p) as f:
                for line in f:
                    x = line.split()
                    if len(x) >= 2:
                        end = float(x[0])
                        lat = float(x[1]) * 1000.0
                        out.append((end - lat / 1000.0, end, lat))
    out.sort(key=lambda r: r[1])
    return out


def samples_of(d):
    """name -> key -> [(t, value)]"""
    s = defaultdict(lambda: defaultdict(list))
    p = os.path.join(d, "samples")
    if os.path.exists(p) or os.path.exists(p + ".gz"):
        with opentext(p) as f:
            for line in f:
                x = line.split()
                if len(x) == 4:
                    s[x[1]][x[2]].append((float(x[0]), int(x[3])))
    return s


def value_at(series, t):
    """The last sampled value at or before t (series of changes)."""
    v = None
    for ts, val in series:
        if ts > t:
            break
        v = val
    if v is None and series:
        v = series[0][1]
    return v


def delta(series, t0, t1):
    if not series:
        return None
    a, b = value_at(series, t0), value_at(series, t1)
    return None if a is None or b is None else b - a


def rise_intervals(series, t0, t1):
    """(t_prev, t) sample intervals in which the counter grew."""
    out = []
    prev_t = None
    prev_v = None
    for ts, val in series:
        if prev_v is not None and val > prev_v and ts >= t0 and prev_t <= t1:
            out.append((prev_t, ts))
        prev_t, prev_v = ts, val
    return out


def pct(xs, p):
    if not xs:
        return None
    xs = sorted(xs)
    k = (len(xs) - 1) * p / 100.0
    lo, hi = math.floor(k), math.ceil(k)
    return xs[lo] + (xs[hi] - xs[lo]) * (k - lo)


def segres(path):
    """flags -> (size_kb, resident_kb), and per file."""
    tot = defaultdict(lambda: [0, 0])
    files = defaultdict(lambda: defaultdict(lambda: [0, 0]))
    try:
        with open(path) as f:
            for line in f:
                x = line.rsplit(None, 3)
                if len(x) == 4:
                    fl = "r-x" if "x" in x[1] else ("rw-" if "w" in x[1] else "r--")
                    tot[fl][0] += int(x[2])
                    tot[fl][1] += int(x[3])
                    files[x[0]][fl][0] += int(x[2])
                    files[x[0]][fl][1] += int(x[3])
    except OSError:
        pass
    return tot, files


def hostload(out, t0, t1):
    p = os.path.join(out, "hostload")
    xs = []
    if os.path.exists(p):
        with open(p) as f:
            for line in f:
                x = line.split()
                if len(x) >= 2 and t0 - 10 <= float(x[0]) <= t1 + 10:
                    xs.append(float(x[1]))
    return statistics.mean(xs) if xs else None


def analyse_run(out, d):
    meta = kv(os.path.join(d, "meta"))
    if not meta or "error" in meta:
        return None
    svc = meta["service"]
    t0, t1 = float(meta["t_measure"]), float(meta["t_end"])
    reqs = [r for r in requests_of(d, svc) if r[1] >= t0 - 1]
    lats = [r[2] for r in reqs]
    s = samples_of(d)
    svcs = s.get("svc", {})
    r = dict(meta)
    r["dir"] = d
    r["requests"] = len(reqs)
    # over the span the requests cover: a client can run past its -T/-d
    # when the service is slow to answer or to connect
    span = (reqs[-1][1] - min(q[0] for q in reqs)) if len(reqs) > 1 else 0
    r["throughput"] = len(reqs) / span if span > 0 else None
    r["p50"] = pct(lats, 50)
    r["p99"] = pct(lats, 99)
    r["p999"] = pct(lats, 99.9)
    r["max"] = max(lats) if lats else None
    slow = [q for q in reqs if q[2] > SLOW_MS]
    r["slow"] = len(slow)
    ex = rise_intervals(svcs.get("pgmajfault_exec", []), t0, t1)
    r["slow_execfault"] = sum(1 for q in slow if any(a <= q[1] and b >= q[0] for a, b in ex))
    mj = delta(svcs.get("pgmajfault", []), t0, t1)
    mje = delta(svcs.get("pgmajfault_exec", []), t0, t1)
    r["majflt"] = mj
    r["majflt_exec"] = mje
    r["majflt_per_req"] = mj / len(reqs) if mj is not None and reqs else None
    r["majflt_exec_per_req"] = mje / len(reqs) if mje is not None and reqs else None
    r["refault_file"] = delta(svcs.get("workingset_refault_file", []), t0, t1)
    for k in svcs:
        if "exec" in k and k != "pgmajfault_exec":
            r["stat_" + k] = value_at(svcs[k], t1)
    # what exec_protect held: v2 kernels report exec_protect_kept (it moves
    # with reclaim's laps and overshoots with concurrent reclaimers), v3
    # exec_protect_usage (the image pages charged, within the bound); its
    # median over the measured phase, and its peak in a column of its own
    key = "exec_protect_usage" if "exec_protect_usage" in svcs else "exec_protect_kept"
    kept = [v for t, v in svcs.get(key, []) if t0 <= t <= t1]
    if kept:
        r["stat_exec_protect_kept"] = statistics.median(kept)
        r["stat_exec_protect_kept_peak"] = max(kept)
    # OOM kills: the kernel's reports in the guest's log, and memory.events
    kills = int(meta.get("oom_dmesg", 0) or 0)
    ev = 0
    for name in ("svc-events", "slice-events", "pressure-events"):
        a = stat_file(os.path.join(d, "pre." + name)).get("oom_kill", 0)
        b = stat_file(os.path.join(d, "post." + name)).get("oom_kill", 0)
        ev = max(ev, b - a)
    r["oom_kills"] = max(kills, ev)
    r["svc_died"] = int(meta.get("svc_state_end", "active") != "active")
    vm = s.get("vm", {})
    r["pgscan_direct"] = delta(vm.get("pgscan_direct", []), t0, t1)
    r["allocstall"] = sum(delta(vm.get(k, []), t0, t1) or 0 for k in vm if k.startswith("allocstall"))
    k = s.get("kswapd", {})
    ku, ks = delta(k.get("utime", []), t0, t1), delta(k.get("stime", []), t0, t1)
    r["kswapd_s"] = ((ku or 0) + (ks or 0)) / HZ if ku is not None or ks is not None else None
    sy = delta(s.get("cpu", {}).get("system", []), t0, t1)
    r["sys_s"] = sy / HZ if sy is not None else None
    ps = delta(s.get("psi", {}).get("some_total", []), t0, t1)
    r["psi_some_ms"] = ps / 1000.0 if ps is not None else None
    # memory held out of reclaim, per mode
    seg, _ = segres(os.path.join(d, "segres"))
    r["img_res_mib"] = sum(v[1] for v in seg.values()) / 1024.0
    r["rx_res_mib"] = seg["r-x"][1] / 1024.0
    cur = int(meta.get("svc_current_end") or 0) / 2**20
    mode = meta["mode"]
    if mode in ("low", "min"):
        held = min(cur, int(meta.get("ws_kb", 0)) / 1024.0)
    elif mode == "lowmax":
        held = cur
    elif mode == "lock":
        held = int(meta.get("daemon_vmlck_after") or 0) / 2**20
    elif mode == "mlockall":
        held = int(meta.get("svc_vmlck_after") or 0) / 2**20
    elif mode.startswith("ep"):
        # v2: the r-x mappings; a kernel with an exec-image counter in
        # memory.stat: what it counts
        held = r["rx_res_mib"]
        if r.get("stat_exec_protect_kept") is not None:
            held = r["stat_exec_protect_kept"] / 2**20
    else:
        held = 0.0
    r["held_mib"] = held
    r["svc_current_mib"] = cur
    r["hostload"] = hostload(out, float(meta["t_start"]), t1)
    # the spike: its stall and how long until requests are back to normal
    if meta["shape"] == "spike":
        h = stat_file(os.path.join(d, "hog.out"), float)
        if "spike_start" in h and "spike_end" in h:
            a, b = h["spike_start"], h["spike_end"]
            before = [q[2] for q in reqs if a - 5 <= q[1] < a]
            lim = max(SLOW_MS, 2 * (pct(before, 99) or 0))
            during = [q[2] for q in reqs if a <= q[1] <= b + 5]
            r["spike_max"] = max(during) if during else None
            # recovered: the first time after the spike's end from which
            # every request for 2 s is below the limit
            after = [q for q in reqs if q[1] >= b]
            rec = None
            for i, q in enumerate(after):
                win = [x for x in after[i:] if x[1] <= q[1] + 2]
                if win and all(x[2] <= lim for x in win) and (q[1] + 2 <= t1):
                    rec = max(0.0, q[0] - b) if i else 0.0
                    break
            r["spike_recover_s"] = rec
            r["breached"] = delta(svcs.get("pgexec_breached", []), a, b + 5)
    return r


def ci_median(xs):
    """Median and a distribution-free ~95% interval from order statistics
    (binomial): with 5 runs it is [min, max] (93.8%), 6-8 runs drop one
    run at each end only from 9 runs on."""
    xs = sorted(x for x in xs if x is not None)
    n = len(xs)
    if n == 0:
        return None, None, None
    med = statistics.median(xs)
    k = 0
    # the largest k with P(Bin(n, 1/2) <= k - 1) <= 2.5%
    for j in range(1, n // 2 + 1):
        tail = sum(math.comb(n, i) for i in range(j)) / 2**n
        if tail <= 0.025:
            k = j
    if k == 0:
        return med, xs[0], xs[-1]
    return med, xs[k - 1], xs[n - k]


def fmt(v, nd=1):
    if v is None:
        return "–"
    if isinstance(v, float) and (abs(v) >= 100 or nd == 0):
        return f"{v:.0f}"
    return f"{v:.{nd}f}" if isinstance(v, float) else str(v)


def cell_str(xs, nd=1):
    med, lo, hi = ci_median(xs)
    if med is None:
        return "–"
    if lo == hi:
        return fmt(float(med), nd)
    return f"{fmt(float(med), nd)} [{fmt(float(lo), nd)}–{fmt(float(hi), nd)}]"


def main():
    out = sys.argv[1]
    runs = []
    for metaf in sorted(glob.glob(os.path.join(out, "*", "*", "*", "*", "meta"))):
        d = os.path.dirname(metaf)
        if not os.path.exists(os.path.join(d, "done")):
            continue
        r = analyse_run(out, d)
        if r:
            runs.append(r)
    if not runs:
        print(f"analyze.py: no finished runs under {out}")
        return 1
    cells = defaultdict(list)
    for r in runs:
        cells[(r["service"], r["shape"], r["lru"], r["mode"])].append(r)

    keys = ["lru", "service", "shape", "mode", "rep", "requests", "throughput", "p50", "p99", "p999", "max",
            "slow", "slow_execfault", "majflt", "majflt_exec", "majflt_per_req", "majflt_exec_per_req",
            "refault_file", "held_mib", "img_res_mib", "rx_res_mib", "svc_current_mib", "oom_kills", "svc_died",
            "kswapd_s", "sys_s", "pgscan_direct", "allocstall", "psi_some_ms", "hostload", "spike_max",
            "spike_recover_s", "breached", "exec_protect_bound", "hog_mib", "slicemax_mib", "ws_kb"]
    keys += sorted({k for r in runs for k in r if k.startswith("stat_")})
    with open(os.path.join(out, "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for r in runs:
            w.writerow([r.get(k) for k in keys])

    kern = kv(os.path.join(out, "kernel"))
    L = []
    L.append(f"# bench/real results: {os.path.basename(os.path.abspath(out))}\n")
    L.append(f"Kernel {kern.get('kernel_release', '?')} (sha256 {kern.get('kernel_sha256', '?')}), "
             f"qemu TCG, 2 vCPUs, guest RAM as in each LRU's setup file, no swap. Commands:\n")
    try:
        with open(os.path.join(out, "commands")) as f:
            for line in f:
                L.append(f"- `{line.strip()}`")
    except OSError:
        pass
    L.append("")
    L.append("Each value: median over the runs of the cell [95% interval of the median from order "
             "statistics; with fewer than 6 runs it is the whole range]. Latency from the client's "
             "per-request log (pgbench --log) or nginx's access log ($request_time, 1 ms resolution). "
             f">{SLOW_MS:.0f} ms with an exec fault: slow requests overlapping a 100 ms sample in which the "
             "service's pgmajfault_exec grew. Held: what the mode keeps out of reclaim (memory.low/min: "
             "the service's memory up to the setting; lock: the daemon's VmLck; mlockall: the service's "
             "VmLck; exec_protect: the median over the measured phase of memory.stat's "
             "exec_protect_usage (kernel v3) or exec_protect_kept (v2), the peak in runs.csv, else its "
             "r-x resident pages). Host load: the host's 1-min load average over the run.\n")
    for svc in SERVICE_ORDER:
        sk = [k for k in cells if k[0] == svc]
        if not sk:
            continue
        L.append(f"## {SERVICE_NAME[svc]}\n")
        L.append("| shape | LRU | mode | runs | req/s | p50 ms | p99 ms | p99.9 ms | max ms | >20 ms | "
                 ">20 ms with exec fault | majflt/req | exec majflt/req | held MiB | image resident MiB | "
                 "OOM kills | kswapd s | sys s | host load |")
        L.append("|" + " --- |" * 19)
        for shape in SHAPE_ORDER:
            for lru in ("classic", "mglru"):
                for mode in MODE_ORDER:
                    rs = cells.get((svc, shape, lru, mode))
                    if not rs:
                        continue
                    g = lambda k: [x.get(k) for x in rs]
                    L.append(f"| {shape} | {lru} | {MODE_NAME[mode]} | {len(rs)} | {cell_str(g('throughput'))} | "
                             f"{cell_str(g('p50'), 2)} | {cell_str(g('p99'))} | {cell_str(g('p999'))} | "
                             f"{cell_str(g('max'))} | {cell_str(g('slow'), 0)} | {cell_str(g('slow_execfault'), 0)} | "
                             f"{cell_str(g('majflt_per_req'), 2)} | {cell_str(g('majflt_exec_per_req'), 2)} | "
                             f"{cell_str(g('held_mib'))} | {cell_str(g('img_res_mib'))} | "
                             f"{cell_str(g('oom_kills'), 0)} | {cell_str(g('kswapd_s'))} | {cell_str(g('sys_s'))} | "
                             f"{cell_str(g('hostload'))} |")
        L.append("")
        spikes = [k for k in sk if k[1] == "spike"]
        if spikes:
            L.append(f"Spike beyond the room ({SERVICE_NAME[svc]}): the longest request from the spike's "
                     "start to 5 s after its end, seconds until every request for 2 s is under "
                     "max(20 ms, 2x the p99 of the 5 s before), exec_protect breaches, OOM kills, the "
                     "service dead at the end:\n")
            L.append("| LRU | mode | runs | stall ms | recovery s | pgexec_breached | OOM kills | service died |")
            L.append("|" + " --- |" * 8)
            for lru in ("classic", "mglru"):
                for mode in MODE_ORDER:
                    rs = cells.get((svc, "spike", lru, mode))
                    if not rs:
                        continue
                    g = lambda k: [x.get(k) for x in rs]
                    L.append(f"| {lru} | {MODE_NAME[mode]} | {len(rs)} | {cell_str(g('spike_max'))} | "
                             f"{cell_str(g('spike_recover_s'))} | {cell_str(g('breached'), 0)} | "
                             f"{cell_str(g('oom_kills'), 0)} | {cell_str(g('svc_died'), 0)} |")
            L.append("")

    # issue 36: major faults per request, moderate and severe
    L.append("## Issue 36: major faults per request, moderate and severe\n")
    L.append("| service | regime | LRU | mode | runs | majflt/req | exec majflt/req | p99.9 ms | held MiB |")
    L.append("|" + " --- |" * 9)
    for svc in SERVICE_ORDER:
        for shape in ("moderate", "severe"):
            for lru in ("classic", "mglru"):
                for mode in ("none", "lowmax", "epmax", "epbound", "eptext", "lock"):
                    rs = cells.get((svc, shape, lru, mode))
                    if not rs:
                        continue
                    g = lambda k: [x.get(k) for x in rs]
                    L.append(f"| {svc} | {shape} | {lru} | {MODE_NAME[mode]} | {len(rs)} | "
                             f"{cell_str(g('majflt_per_req'), 2)} | {cell_str(g('majflt_exec_per_req'), 2)} | "
                             f"{cell_str(g('p999'))} | {cell_str(g('held_mib'))} |")
    L.append("")

    # per-segment residency at the end of the runs (issue 36 item 4)
    L.append("## Residency per ELF segment kind at the end of the run\n")
    L.append("Sum over every file the service's processes map executable (and, for cgi, the images a "
             "request runs): resident / size in MiB, r-x (code), r-- (headers, .rodata, .eh_frame), "
             "rw- (relro, .data); median over runs. Raw per file: segres in each run's directory.\n")
    L.append("| service | shape | LRU | mode | r-x | r-- | rw- |")
    L.append("|" + " --- |" * 7)
    for svc in SERVICE_ORDER:
        for shape in SHAPE_ORDER:
            for lru in ("classic", "mglru"):
                for mode in MODE_ORDER:
                    rs = cells.get((svc, shape, lru, mode))
                    if not rs:
                        continue
                    segs = [segres(os.path.join(x["dir"], "segres"))[0] for x in rs]
                    cols = []
                    for fl in ("r-x", "r--", "rw-"):
                        res = statistics.median(s[fl][1] for s in segs) / 1024
                        size = statistics.median(s[fl][0] for s in segs) / 1024
                        cols.append(f"{res:.1f} / {size:.1f}")
                    L.append(f"| {svc} | {shape} | {lru} | {MODE_NAME[mode]} | " + " | ".join(cols) + " |")
    L.append("")

    L.extend(targets(cells))
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(L) + "\n")
    plots(out, cells)
    print(f"analyze.py: {len(runs)} runs; wrote {out}/results.md, {out}/runs.csv, {out}/cdf-*.png")
    return 0


def med(rs, k):
    return ci_median([x.get(k) for x in rs])[0]


def targets(cells):
    L = ["## Against the targets\n"]
    L.append("Issue 29: (1) the protected service's p99.9 under pressure within 2x its unloaded p99.9; "
             "(2) exec_protect at least 2x better p99.9 than the best alternative on at least one service "
             "and shape, with no worse throughput; (3) 0 OOM kills in the moderate, severe and slice shapes "
             "for every mode that claims to be safe. Medians over runs.\n")
    alts = ["lowmax", "low", "min", "lock", "mlockall", "ttl250", "ttl1000", "ttl5000"]
    for (svc, shape, lru, mode), rs in sorted(cells.items()):
        if shape in ("unloaded", "spike") or not mode.startswith("ep"):
            continue
        base = cells.get((svc, "unloaded", lru, "none"))
        p = med(rs, "p999")
        line = f"- {svc}, {shape}, {lru}, {MODE_NAME[mode]}: p99.9 {fmt(p)} ms"
        if base and p is not None:
            b = med(base, "p999")
            line += f" vs unloaded {fmt(b)} ms: {'met' if p <= 2 * b else 'missed'} (1)"
        best = None
        for a in alts:
            ars = cells.get((svc, shape, lru, a))
            if ars and med(ars, "p999") is not None and (best is None or med(ars, "p999") < best[1]):
                best = (a, med(ars, "p999"), med(ars, "throughput"))
        if best and p is not None:
            ok = p * 2 <= best[1] and med(rs, "throughput") >= best[2] * 0.95
            line += (f"; best alternative {MODE_NAME[best[0]]} {fmt(best[1])} ms: "
                     f"{'2x better' if ok else 'not 2x better'} (2)")
        line += f"; OOM kills {fmt(med(rs, 'oom_kills'), 0)} (3)"
        L.append(line)
    L.append("")
    L.append("Issue 36: exec_protect at <= 10% of unprotected major faults per request in both regimes, "
             "and within 10% of memory.low=max's in the moderate one:\n")
    for (svc, shape, lru, mode), rs in sorted(cells.items()):
        if shape not in ("moderate", "severe") or mode != "epmax":
            continue
        n = cells.get((svc, shape, lru, "none"))
        lo = cells.get((svc, shape, lru, "lowmax"))
        e = med(rs, "majflt_per_req")
        line = f"- {svc}, {shape}, {lru}: exec_protect=max {fmt(e, 2)} major faults/request"
        if n and e is not None and med(n, "majflt_per_req"):
            u = med(n, "majflt_per_req")
            line += f", unprotected {fmt(u, 2)} ({100 * e / u:.0f}%: {'met' if e <= 0.1 * u else 'missed'})"
        if lo and shape == "moderate" and e is not None:
            m = med(lo, "majflt_per_req")
            u = med(n, "majflt_per_req") if n else None
            ok = u is not None and e - m <= 0.1 * u
            line += f", memory.low=max {fmt(m, 2)} ({'met' if ok else 'missed'})"
        L.append(line)
    L.append("")
    return L


def plots(out, cells):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("analyze.py: no matplotlib (apt-get install python3-matplotlib): no plots")
        return
    for svc in SERVICE_ORDER:
        panels = sorted({(k[1], k[2]) for k in cells if k[0] == svc and k[1] != "unloaded"},
                        key=lambda p: (SHAPE_ORDER.index(p[0]), p[1]))
        if not panels:
            continue
        cols = min(2, len(panels))
        rows = (len(panels) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(7 * cols, 4.5 * rows), squeeze=False)
        for ax, (shape, lru) in zip(axes.flat, panels):
            top = 0.5
            series = [("unloaded", cells.get((svc, "unloaded", lru, "none")))]
            series += [(m, cells.get((svc, shape, lru, m))) for m in MODE_ORDER]
            for m, rs in series:
                if not rs:
                    continue
                lats = sorted(q[2] for x in rs for q in requests_of(x["dir"], svc)
                              if q[1] >= float(x["t_measure"]) - 1)
                if not lats:
                    continue
                n = len(lats)
                ys = [(i + 0.5) / n for i in range(n)]
                top = max(top, ys[-1])
                ax.plot([max(v, 0.05) for v in lats], ys, label=f"{MODE_NAME.get(m, m)} ({len(rs)})",
                        linestyle="--" if m == "unloaded" else "-", linewidth=1.2)
            ax.set_xscale("log")
            ax.set_yscale("logit")
            ax.set_ylim(0.02, top)
            ax.set_xlabel("latency ms")
            ax.set_ylabel("fraction of requests at most")
            ax.set_title(f"{SERVICE_NAME[svc]}: {shape}, {lru}", fontsize=9)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(panels):]:
            ax.axis("off")
        fig.tight_layout()
        fig.savefig(os.path.join(out, f"cdf-{svc}.png"), dpi=80)
        plt.close(fig)


if __name__ == "__main__":
    sys.exit(main())
