#!/usr/bin/env python3
"""Time strata, reclass-rs and Kapitan's reclass backend on generated inventories.

Called by bench/inventory.sh (which sets up the virtualenv, generates the
inventories and builds strata); see docs/bench.md. Usage:

  run_bench.py --python VENV_PYTHON --strata BIN --work DIR
               --small N --large M --kapitan-targets K [--repeat R]
               [--reuse-peers] [--skip-strata]

Inventories are expected at DIR/inv-N (N = small, large, K). Every command
runs under /usr/bin/time -v, which gives wall time, CPU time (user + sys, all
threads) and peak RSS. Peer results are saved to DIR/peer-results.json;
--reuse-peers reads them back instead of re-running the (slow) peers.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(cmd, stdout_path="/dev/null"):
    """Run cmd under /usr/bin/time -v; return (wall_s, cpu_s, peak_kib, stderr_text)."""
    with open(stdout_path, "wb") as out:
        p = subprocess.run(
            ["/usr/bin/time", "-v"] + cmd, stdout=out, stderr=subprocess.PIPE, text=True
        )
    err = p.stderr
    if p.returncode != 0:
        tail = "\n".join(err.splitlines()[:30])
        raise RuntimeError("command failed (exit %d): %s\n%s" % (p.returncode, " ".join(cmd), tail))

    def field(name):
        m = re.search(r"^\s*%s: (.+)$" % re.escape(name), err, re.M)
        if not m:
            raise RuntimeError("no %r in /usr/bin/time output" % name)
        return m.group(1).strip()

    wall = field("Elapsed (wall clock) time (h:mm:ss or m:ss)")
    secs = 0.0
    for part in wall.split(":"):
        secs = secs * 60 + float(part)
    cpu = float(field("User time (seconds)")) + float(field("System time (seconds)"))
    rss = int(field("Maximum resident set size (kbytes)"))
    return secs, cpu, rss, err


def run_peer(python, backend, inv, out_path):
    wall, cpu, rss, err = timed([python, os.path.join(HERE, "peers.py"), backend, inv, out_path])
    m = re.search(r"^PEER-TIMES (.*)$", err, re.M)
    inner = json.loads(m.group(1)) if m else {}
    return {"wall": wall, "cpu": cpu, "rss_kib": rss, "inner": inner}


def run_strata(strata, inv, repeat):
    """Median of `repeat` runs (by wall time), output to /dev/null."""
    runs = []
    for _ in range(repeat):
        wall, cpu, rss, _ = timed([strata, "inventory", "--inventory-path", inv, "--format", "json"])
        runs.append({"wall": wall, "cpu": cpu, "rss_kib": rss})
    runs.sort(key=lambda r: r["wall"])
    med = runs[len(runs) // 2]
    med = dict(med, runs=[round(r["wall"], 3) for r in runs])
    med["rss_kib"] = max(r["rss_kib"] for r in runs)
    return med


# --- output comparison ---


def diff(a, b, path, out, limit):
    if len(out) >= limit:
        return
    if type(a) is not type(b):
        out.append((path, a, b))
    elif isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a:
                out.append(("%s/%s" % (path, k), "<missing>", b[k]))
            elif k not in b:
                out.append(("%s/%s" % (path, k), a[k], "<missing>"))
            else:
                diff(a[k], b[k], "%s/%s" % (path, k), out, limit)
            if len(out) >= limit:
                return
    elif isinstance(a, list):
        if len(a) != len(b):
            out.append((path + " (length %d vs %d)" % (len(a), len(b)), a, b))
            return
        for i, (x, y) in enumerate(zip(a, b)):
            diff(x, y, "%s/%d" % (path, i), out, limit)
    elif a != b:
        out.append((path, a, b))


def short(v):
    s = json.dumps(v, sort_keys=True)
    return s if len(s) <= 120 else s[:117] + "..."


def compare(strata_json, ref_json, limit=20, subset=False):
    """Compare strata's {"nodes": ...} with reclass-rs's; return list of differences.

    With subset, only the targets of the first file are compared."""
    with open(strata_json) as f:
        got = json.load(f).get("nodes", {})
    with open(ref_json) as f:
        want = json.load(f)["nodes"]
    if subset:
        want = {k: v for k, v in want.items() if k in got}
    out = []
    for name in sorted(set(got) | set(want)):
        if name not in got:
            out.append(("/" + name, "<missing in strata>", "<target>"))
        elif name not in want:
            out.append(("/" + name, "<target>", "<missing in reclass-rs>"))
        else:
            g, w = got[name], want[name]
            for key in ("classes", "applications", "parameters"):
                diff(g.get(key, "<missing>"), w.get(key), "/%s/%s" % (name, key), out, limit)
        if len(out) >= limit:
            break
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", required=True)
    ap.add_argument("--strata", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--small", type=int, default=100)
    ap.add_argument("--large", type=int, default=1000)
    ap.add_argument("--kapitan-targets", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--reuse-peers", action="store_true")
    ap.add_argument("--skip-strata", action="store_true")
    ap.add_argument("--peer-large", action="store_true", help="also time reclass-rs on the large inventory")
    a = ap.parse_args()
    inv = lambda n: os.path.join(a.work, "inv-%d" % n)  # noqa: E731
    rs_json = os.path.join(a.work, "reclass-rs-%d.json" % a.small)
    peer_file = os.path.join(a.work, "peer-results.json")
    key = {"small": a.small, "kapitan_targets": a.kapitan_targets, "peer_large": a.large if a.peer_large else None}

    peers = None
    if a.reuse_peers and os.path.exists(peer_file) and os.path.exists(rs_json):
        with open(peer_file) as f:
            saved = json.load(f)
        if saved.get("key") == key:
            peers = saved
            print("reusing peer results from %s (measured %s)" % (peer_file, saved.get("when")))
    if peers is None:
        print("timing reclass-rs on %d targets ..." % a.small, flush=True)
        rs = run_peer(a.python, "rs", inv(a.small), rs_json)
        print("timing Kapitan's reclass backend on %d targets ..." % a.kapitan_targets, flush=True)
        kp = run_peer(
            a.python, "kapitan", inv(a.kapitan_targets), os.path.join(a.work, "kapitan-%d.json" % a.kapitan_targets)
        )
        rs_large = None
        if a.peer_large:
            print("timing reclass-rs on %d targets ..." % a.large, flush=True)
            rs_large = run_peer(a.python, "rs", inv(a.large), "/dev/null")
        peers = {
            "key": key,
            "reclass-rs-large": rs_large,
            "when": subprocess.run(["date", "-u", "+%Y-%m-%dT%H:%M:%SZ"], capture_output=True, text=True).stdout.strip(),
            "reclass-rs": rs,
            "kapitan": kp,
        }
        with open(peer_file, "w") as f:
            json.dump(peers, f, indent=1)
    if a.kapitan_targets <= a.small:
        # the inventory must only use features on which the peers agree
        kp_json = os.path.join(a.work, "kapitan-%d.json" % a.kapitan_targets)
        d = compare(kp_json, rs_json, subset=True)
        if d:
            print("WARNING: the peers disagree on this inventory (path: kapitan | reclass-rs):")
            for p, g, w in d:
                print("  %s: %s | %s" % (p, short(g), short(w)))
        else:
            print("peers agree: Kapitan's output equals reclass-rs's on the %d common targets" % a.kapitan_targets)

    strata = {}
    if not a.skip_strata:
        for n in (a.small, a.large):
            print("timing strata on %d targets (median of %d) ..." % (n, a.repeat), flush=True)
            try:
                strata[n] = run_strata(a.strata, inv(n), a.repeat)
            except RuntimeError as e:
                print("strata failed: %s" % e)
                break

    rows = [("reclass-rs 0.11.0", a.small, peers["reclass-rs"])]
    if peers.get("reclass-rs-large"):
        rows.append(("reclass-rs 0.11.0", a.large, peers["reclass-rs-large"]))
    rows.append(("kapitan 0.36.3 (reclass)", a.kapitan_targets, peers["kapitan"]))
    rows += [("strata", n, strata[n]) for n in sorted(strata)]
    base = strata.get(a.small)
    print()
    print("| tool | targets | wall s | CPU s | wall s/target | CPU s/target | peak MiB | wall ratio | CPU ratio |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for tool, n, r in rows:
        wpt, cpt = r["wall"] / n, r["cpu"] / n
        # peers: against strata on the same number of targets where measured;
        # strata's own rows: against strata on the small inventory (scaling)
        bn = n if (tool != "strata" and n in strata) else a.small
        b = strata.get(bn)
        if b:
            wr = "%.1fx" % (wpt / (b["wall"] / bn))
            cr = "%.1fx" % (cpt / (b["cpu"] / bn))
        else:
            wr = cr = "n/a"
        print(
            "| %s | %d | %.2f | %.2f | %.4f | %.4f | %.1f | %s | %s |"
            % (tool, n, r["wall"], r["cpu"], wpt, cpt, r["rss_kib"] / 1024, wr, cr)
        )
    print()
    print("Ratios: a peer's per-target time divided by strata's per-target time on the same")
    print("inventory (strata's %d-target time for Kapitan's subset); for strata's own rows:" % a.small)
    print("per-target time relative to strata on %d targets (1.0x = linear scaling)." % a.small)
    print("CPU = user + system time of all threads (reclass-rs renders in parallel).")
    if a.kapitan_targets != a.small:
        print("Kapitan was timed on the first %d targets only (the first targets of every" % a.kapitan_targets)
        print("generated inventory are identical) and its figures are scaled per target.")
    for tool, r in (("reclass-rs", peers["reclass-rs"]), ("kapitan", peers["kapitan"])):
        i = r.get("inner", {})
        if i:
            print(
                "%s in-process: imports %.2f s, render %.2f s, JSON dump %.2f s; leaf parameters per target %d..%d"
                % (tool, i["import_s"], i["render_s"], i["dump_s"], i["min_leaves"], i["max_leaves"])
            )
    for n in sorted(strata):
        print("strata %d targets: wall times of the runs %s" % (n, strata[n]["runs"]))
    if a.small in strata and a.large in strata:
        s, l = strata[a.small], strata[a.large]
        print(
            "strata scaling %d -> %d targets: wall x%.2f, CPU x%.2f (x%.0f would be exactly linear)"
            % (a.small, a.large, l["wall"] / s["wall"], l["cpu"] / s["cpu"], a.large / a.small)
        )
    for n, rs in ((a.small, peers["reclass-rs"]), (a.large, peers.get("reclass-rs-large"))):
        if rs and n in strata:
            print(
                "peak memory on %d targets: strata %.1f MiB vs reclass-rs %.1f MiB (%s)"
                % (
                    n,
                    strata[n]["rss_kib"] / 1024,
                    rs["rss_kib"] / 1024,
                    "below" if strata[n]["rss_kib"] < rs["rss_kib"] else "NOT below",
                )
            )

    if a.small in strata:
        out_json = os.path.join(a.work, "strata-%d.json" % a.small)
        subprocess.run(
            [a.strata, "inventory", "--inventory-path", inv(a.small), "--format", "json"],
            stdout=open(out_json, "wb"),
            check=True,
        )
        d = compare(out_json, rs_json)
        print()
        if not d:
            print("MATCH: strata's output equals reclass-rs's for all %d targets" % a.small)
        else:
            print("MISMATCH: strata vs reclass-rs, first differences (path: strata | reclass-rs):")
            for p, g, w in d:
                print("  %s: %s | %s" % (p, short(g), short(w)))
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
