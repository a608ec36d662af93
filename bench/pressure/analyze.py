#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0-or-later
"""Turn the raw results of run.sh into results.md and latency.png.

Usage: analyze.py OUTDIR RESULTS.md PLOT.png COMMAND
"""
import os
import statistics
import sys

MODES = ["none", "protect", "lock", "lockpin", "mlock", "minttl", "protminttl", "auto"]
MODE_NAME = {"none": "none", "protect": "exec_protect=max", "lock": "execguardd lock",
             "lockpin": "execguardd lock, no give-back", "mlock": "whole-file mlock",
             "minttl": "min_ttl_ms=1000 (MGLRU)",
             "protminttl": "exec_protect=max + min_ttl_ms=1000 (MGLRU)",
             "auto": "execguardd Protect=auto (kernel)"}
REL = 50  # relative stall threshold: this many times the unloaded p50


def kv(path):
    d = {}
    if os.path.exists(path):
        for line in open(path):
            for tok in line.split():
                if "=" in tok:
                    k, v = tok.split("=", 1)
                    d[k] = v
    return d


def vmstat(path):
    d = {}
    for line in open(path):
        k, v = line.split()
        d[k] = int(v)
    return d


def psi(path):
    d = {}
    for line in open(path):
        f = line.split()
        d[f[0]] = int(f[-1].split("=")[1])
    return d


def pct(s, q):
    if not s:
        return float("nan")
    return s[min(len(s) - 1, int(q * len(s)))]


def run_stats(d):
    req = {0: [], 1: []}
    fstall = {0: [], 1: []}  # latencies of the requests that took a major fault
    flt = {0: 0, 1: 0}
    cold = {0: [], 1: []}
    for line in open(os.path.join(d, "requests")):
        ph, _, dur, mf, c = map(int, line.split())
        if ph in req:
            req[ph].append(dur / 1000.0)
            flt[ph] += mf
            if mf:
                fstall[ph].append(dur / 1000.0)
            if c:
                cold[ph].append(dur / 1000.0)
    text = {0: 0, 1: 0}
    libs0 = 0
    executed = 0
    for line in open(os.path.join(d, "text")):
        if line.startswith("#"):
            # "# executed generated text: hot H KiB, cold C KiB, of T KiB"
            f = line.replace(",", " ").split()
            executed = (int(f[5]) + int(f[8])) * 1024
            continue
        ph, path, _, res = line.split()
        if int(ph) in text:
            text[int(ph)] += int(res)
        if int(ph) == 0 and not path.endswith("/svc"):
            libs0 += int(res)
    # touched: the generated text it ran, plus what of libc and ld.so was
    # resident after the unloaded phase (small, and mostly used)
    touched = executed + libs0
    a, b = vmstat(os.path.join(d, "pre.vmstat")), vmstat(os.path.join(d, "post.vmstat"))
    dv = {k: b[k] - a.get(k, 0) for k in b}
    pa, pb = psi(os.path.join(d, "pre.psi")), psi(os.path.join(d, "post.psi"))
    held = kv(os.path.join(d, "held"))
    held.setdefault("held_before", "0")
    # auto: when the service was protected (CLOCK_MONOTONIC, us), and the
    # pressure-phase requests with a major fault before and after it
    auto = None
    at = kv(os.path.join(d, "auto")).get("protected_at_sec")
    if os.path.exists(os.path.join(d, "requests")) and os.path.basename(d).startswith("auto-"):
        t_prot = float(at) * 1e6 if at else None
        rows = []
        for line in open(os.path.join(d, "requests")):
            ph, start, dur, mf, _ = map(int, line.split())
            if ph == 1:
                rows.append((start, dur / 1000.0, mf))
        stalls = [s for s, dur, mf in rows if dur > 20 and mf]
        first = min(stalls) if stalls else None
        before = sum(1 for s, dur, mf in rows if dur > 20 and mf and (t_prot is None or s < t_prot))
        after = sum(1 for s, dur, mf in rows if dur > 20 and mf and t_prot is not None and s >= t_prot)
        span = (rows[-1][0] - rows[0][0]) / 1e6 if rows else 0
        auto = dict(protected=t_prot is not None,
                    delay=(t_prot - first) / 1e6 if t_prot is not None and first is not None else None,
                    before=before, after=after,
                    before_s=(t_prot - rows[0][0]) / 1e6 if t_prot is not None and rows else span,
                    after_s=(rows[-1][0] - t_prot) / 1e6 if t_prot is not None and rows else 0)
    return dict(req=req, fstall=fstall, flt=flt, touched=touched, cold=cold, text=text, dv=dv, auto=auto,
                psi_some=(pb["some"] - pa["some"]) / 1000.0,
                psi_full=(pb["full"] - pa["full"]) / 1000.0,
                held=held)


def med(xs):
    xs = [x for x in xs if x == x]
    if not xs:
        return "–"
    m = statistics.median(xs)
    return m, min(xs), max(xs)


def fmt(xs, f="%.0f"):
    r = med(xs)
    if r == "–":
        return r
    m, lo, hi = r
    if len(xs) == 1 or lo == hi:
        return f % m
    return (f + " [" + f + "–" + f + "]") % (m, lo, hi)


def main():
    out, md, png, cmd = sys.argv[1:5]
    lrus = [l for l in ("classic", "mglru") if os.path.isdir(os.path.join(out, l))]
    data = {}
    setup = {}
    for lru in lrus:
        setup[lru] = kv(os.path.join(out, lru, "setup"))
        for mode in MODES:
            runs = []
            rep = 1
            while os.path.exists(os.path.join(out, lru, "%s-%d" % (mode, rep), "requests")):
                runs.append(run_stats(os.path.join(out, lru, "%s-%d" % (mode, rep))))
                rep += 1
            if runs:
                data[(lru, mode)] = runs
    L = []
    w = L.append
    w("Measured with `%s` (kernel %s, qemu TCG, %s KiB RAM, no swap)." % (
        cmd, setup[lrus[0]].get("kernel", "?") if lrus else "?",
        setup[lrus[0]].get("mem_total_kb", "?") if lrus else "?"))
    w("")
    for lru in lrus:
        s = setup[lru]
        w("- %s: lru_gen=%s, %s MiB mlocked (sparse file, `vmtouch -l` style), %s MiB left, "
          "read_ahead_kb=%s" % (lru, s.get("lru_gen"), s.get("lock_mib"), s.get("room_mib"),
                                s.get("read_ahead_kb")))
    w("")
    # unloaded baseline: phase 0 of the unprotected runs, per LRU
    base = {}
    for lru in lrus:
        runs = data.get((lru, "none"), [])
        p50s = [pct(sorted(r["req"][0]), 0.5) for r in runs]
        maxs = [max(r["req"][0]) for r in runs if r["req"][0]]
        base[lru] = (statistics.median(p50s) if p50s else float("nan"),
                     statistics.median(maxs) if maxs else float("nan"))
        w("- %s unloaded (first phase of the `none` runs, before any pressure): p50 %.2f ms, "
          "longest %.1f ms; relative stall threshold %d x p50 = %.1f ms" % (
              lru, base[lru][0], base[lru][1], REL, REL * base[lru][0]))
    w("")
    w("Latency under pressure; median of the runs, [min–max] over runs:")
    w("")
    w("| LRU | mode | runs | requests | >20 ms | >%dx p50 | longest ms | p50 ms | p99 ms | p99.9 ms | >20 ms with a major fault | >%dx p50 with a major fault | longest with a major fault ms | cold-path requests >20 ms |" % (REL, REL))
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for lru in lrus:
        thr = REL * base[lru][0]
        for mode in MODES:
            runs = data.get((lru, mode))
            if not runs:
                continue
            lat = [sorted(r["req"][1]) for r in runs]
            w("| %s | %s | %d | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
                lru, MODE_NAME[mode], len(runs),
                fmt([len(l) for l in lat]),
                fmt([sum(1 for x in l if x > 20) for l in lat]),
                fmt([sum(1 for x in l if x > thr) for l in lat]),
                fmt([l[-1] for l in lat], "%.1f"),
                fmt([pct(l, 0.5) for l in lat], "%.2f"),
                fmt([pct(l, 0.99) for l in lat], "%.1f"),
                fmt([pct(l, 0.999) for l in lat], "%.1f"),
                fmt([sum(1 for x in r["fstall"][1] if x > 20) for r in runs]),
                fmt([sum(1 for x in r["fstall"][1] if x > thr) for r in runs]),
                fmt([max(r["fstall"][1] or [0]) for r in runs], "%.1f"),
                fmt([sum(1 for x in r["cold"][1] if x > 20) for r in runs])))
    w("")
    if any((lru, "auto") in data for lru in lrus):
        w("Protect=auto (nothing configured for the service): time from its first request "
          "over 20 ms with a major fault to its protection (negative: protected before the "
          "first such stall), and requests over 20 ms with a major fault before and after "
          "the protection, with the seconds of the pressure phase each covers; median [min–max]:")
        w("")
        w("| LRU | runs | protected in | first stall to protection s | >20 ms with a major fault before | s before | >20 ms with a major fault after | s after |")
        w("| --- | --- | --- | --- | --- | --- | --- | --- |")
        for lru in lrus:
            runs = data.get((lru, "auto"))
            if not runs:
                continue
            a = [r["auto"] for r in runs if r["auto"]]
            w("| %s | %d | %d of %d | %s | %s | %s | %s | %s |" % (
                lru, len(runs), sum(1 for x in a if x["protected"]), len(runs),
                fmt([x["delay"] for x in a if x["delay"] is not None], "%.1f"),
                fmt([x["before"] for x in a]), fmt([x["before_s"] for x in a], "%.1f"),
                fmt([x["after"] for x in a if x["protected"]]),
                fmt([x["after_s"] for x in a if x["protected"]], "%.1f")))
        w("")
    w("Reclaim and memory during the pressure phase (deltas over it); median [min–max]:")
    w("")
    w("| LRU | mode | svc majflt | pgmajfault_exec | pgscan kswapd / direct | pgsteal kswapd / direct | PSI mem some / full ms | OOM kills | pgexec_protected / breached | text touched MiB | text resident unloaded MiB | text resident at end MiB | held out of reclaim MiB | held / touched |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    MiB = 1048576.0
    notes = []
    for lru in lrus:
        for mode in MODES:
            runs = data.get((lru, mode))
            if not runs:
                continue
            dv = [r["dv"] for r in runs]
            g = lambda k: [x.get(k, 0) for x in dv]
            if mode in ("protect", "protminttl", "auto"):
                held = [r["text"][1] / MiB for r in runs]
            elif mode in ("lock", "lockpin", "mlock"):
                held = [int(r["held"].get("held_after", 0)) / MiB for r in runs]
                before = [int(r["held"]["held_before"]) / MiB for r in runs]
                notes.append("%s, %s: locked %s MiB before the pressure, %s MiB at its end" % (
                    lru, MODE_NAME[mode], fmt(before, "%.1f"), fmt(held, "%.1f")))
            else:
                held = [0 for r in runs]
            ratio = [h / (r["touched"] / MiB) if h else 0 for h, r in zip(held, runs)]
            w("| %s | %s | %s | %s | %s / %s | %s / %s | %s / %s | %s | %s / %s | %s | %s | %s | %s | %s |" % (
                lru, MODE_NAME[mode], fmt([r["flt"][1] for r in runs]), fmt(g("pgmajfault_exec")),
                fmt(g("pgscan_kswapd")), fmt(g("pgscan_direct")),
                fmt(g("pgsteal_kswapd")), fmt(g("pgsteal_direct")),
                fmt([r["psi_some"] for r in runs]), fmt([r["psi_full"] for r in runs]),
                fmt(g("oom_kill")), fmt(g("pgexec_protected")), fmt(g("pgexec_breached")),
                fmt([r["touched"] / MiB for r in runs], "%.1f"),
                fmt([r["text"][0] / MiB for r in runs], "%.1f"),
                fmt([r["text"][1] / MiB for r in runs], "%.1f"),
                fmt(held, "%.1f"), fmt(ratio, "%.2f")))
    w("")
    for n in notes:
        w("- " + n)
    w("")
    w("`text resident`: mincore over all the service's executable file mappings (its "
      "program, libc, ld.so), at the end of the unloaded phase (what it touched, read-ahead "
      "included) and at the end of the pressure phase. `held out of reclaim`: for "
      "exec_protect the protected resident text, for the lock backend and whole-file mlock "
      "the locking process's VmLck. `text touched`: the generated text the service ran "
      "(hot and cold modules, counted by page) plus libc and ld.so as resident after the "
      "unloaded phase; `held / touched` divides by it. Requests `with a major fault` are those whose "
      "getrusage ru_majflt grew: the stalls that text re-reads caused, not those of the "
      "emulated CPU being descheduled on the shared host.")
    w("")
    w("Against the targets of issue 6 (medians over runs):")
    w("")
    for lru in lrus:
        def m(mode, f):
            runs = data.get((lru, mode))
            return statistics.median([f(r) for r in runs]) if runs else None
        thr = REL * base[lru][0]
        n20 = lambda r: sum(1 for x in r["req"][1] if x > 20)
        f20 = lambda r: sum(1 for x in r["fstall"][1] if x > 20)
        frel = lambda r: sum(1 for x in r["fstall"][1] if x > thr)
        longest = lambda r: max(r["req"][1])

        def red(a, b):
            if a is None or b is None:
                return "n/a"
            if a == 0:
                return "n/a (none had 0)"
            return "%.1f%% fewer (%g -> %g)" % (100.0 * (a - b) / a, a, b)
        for mode, goal in (("protect", 99.9), ("lock", 99), ("lockpin", 99)):
            if (lru, mode) not in data:
                continue
            w("- %s, %s: requests >20 ms %s (goal >= %g%% fewer); with a major fault %s; "
              ">%.1f ms with a major fault %s" % (
                  lru, MODE_NAME[mode], red(m("none", n20), m(mode, n20)), goal,
                  red(m("none", f20), m(mode, f20)), thr,
                  red(m("none", frel), m(mode, frel))))
        if (lru, "protect") in data:
            lo = m("protect", longest)
            lf = m("protect", lambda r: max(r["fstall"][1] or [0]))
            w("- %s, exec_protect=max: longest %.1f ms against 2x the unloaded longest = %.1f ms: %s; "
              "longest with a major fault %.1f ms" % (
                lru, lo, 2 * base[lru][1], "met" if lo <= 2 * base[lru][1] else "missed", lf))
        for mode in ("lock", "lockpin"):
            if (lru, mode) not in data:
                continue
            held = lambda r: int(r["held"].get("held_after", 0)) / MiB
            w("- %s, %s: OOM kills %g; held %.1f MiB of %.1f MiB touched (%.2fx; exec_protect=max: %s)" % (
                lru, MODE_NAME[mode], m(mode, lambda r: r["dv"].get("oom_kill", 0)), m(mode, held),
                m(mode, lambda r: r["touched"] / MiB),
                m(mode, lambda r: held(r) / max(1e-9, r["touched"] / MiB)),
                "%.2fx" % m("protect", lambda r: r["text"][1] / max(1, r["touched"]))
                if (lru, "protect") in data else "not run"))
        if (lru, "protect") in data:
            oom = m("protect", lambda r: r["dv"].get("oom_kill", 0))
            w("- %s, exec_protect=max: OOM kills %g; held %.1f MiB of %.1f MiB touched (%.2fx, goal <= 1.1x)" % (
                lru, oom, m("protect", lambda r: r["text"][1] / MiB),
                m("protect", lambda r: r["touched"] / MiB),
                m("protect", lambda r: r["text"][1] / max(1, r["touched"]))))
    open(md, "w").write("\n".join(L) + "\n")
    print("\n".join(L))

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("analyze.py: no matplotlib, no plot", file=sys.stderr)
        return
    fig, axes = plt.subplots(1, len(lrus), figsize=(6.5 * len(lrus), 4.8), squeeze=False)
    for ax, lru in zip(axes[0], lrus):
        unl = sorted(x for r in data.get((lru, "none"), []) for x in r["req"][0])
        series = [("unloaded", unl)] + [
            (MODE_NAME[m], sorted(x for r in data.get((lru, m), []) for x in r["req"][1]))
            for m in MODES if (lru, m) in data]
        for name, l in series:
            if not l:
                continue
            n = len(l)
            ax.step(l, [1.0 - i / n for i in range(n)], where="post", label="%s (%d)" % (name, n))
        ax.axvline(20, color="grey", ls="--", lw=0.8)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("request latency, ms")
        ax.set_ylabel("fraction of requests slower")
        ax.set_title("%s LRU, pooled over runs" % lru)
        ax.legend(fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    fig.tight_layout()
    fig.savefig(png, dpi=100)
    print("analyze.py: wrote %s and %s" % (md, png))


main()
