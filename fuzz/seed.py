#!/usr/bin/env python3
"""Writes the seed corpora for the fuzz targets from tests/fixtures.

fuzz/seed.py OUTDIR: one directory per target under OUTDIR, each seed a
file named by its content's hash (so re-running is idempotent). The input
shapes follow fuzz/src/lib.rs: `inventory` is a target and up to three
classes (c0..c2) joined by lines `===`; `overlay` a template and an
overlay; `redact` an old and a new version; `refs` one scalar.
"""
import hashlib
import os
import re
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
FIX = os.path.join(ROOT, "tests", "fixtures")
SEP = "\n===\n"
MAX = 1 << 16


def files(*dirs, exts=(".yml", ".yaml")):
    out = []
    for d in dirs:
        for base, subdirs, names in os.walk(os.path.join(FIX, d)):
            subdirs.sort()
            for n in sorted(names):
                p = os.path.join(base, n)
                if n.endswith(exts) and os.path.isfile(p) and not os.path.islink(p):
                    if os.path.getsize(p) <= MAX:
                        out.append(p)
    return out


def read(p):
    with open(p, encoding="utf-8", errors="replace") as f:
        return f.read()


def write(outdir, target, text, cap):
    d = os.path.join(outdir, target)
    os.makedirs(d, exist_ok=True)
    if len(os.listdir(d)) >= cap:
        return
    data = text.encode("utf-8")[:MAX]
    name = hashlib.sha1(data).hexdigest()
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def main():
    outdir = sys.argv[1]
    inv = files("inventory", "hostile", "commodore", "refs", "review/lint")
    for p in inv:
        write(outdir, "yaml", read(p), 400)
    # refs: each distinct scalar that holds a reference.
    seen = set()
    for p in inv:
        for line in read(p).splitlines():
            if "${" in line:
                v = re.sub(r"^\s*(- )?[^:]*:\s*", "", line, count=1).strip().strip("'\"")
                if v and v not in seen:
                    seen.add(v)
                    write(outdir, "refs", v, 400)
    # inventory: each inventory's targets, with up to three of its classes
    # renamed c0..c2 and included by the target.
    roots = sorted(b for b, d, _ in os.walk(FIX) if "targets" in d)
    for root in roots:
        tdir, cdir = os.path.join(root, "targets"), os.path.join(root, "classes")
        classes = []
        if os.path.isdir(cdir):
            for b, _, names in sorted(os.walk(cdir)):
                classes += [os.path.join(b, n) for n in sorted(names) if n.endswith((".yml", ".yaml"))]
        for i, t in enumerate(sorted(os.listdir(tdir))[:8]):
            tp = os.path.join(tdir, t)
            if not os.path.isfile(tp) or os.path.islink(tp) or os.path.getsize(tp) > MAX:
                continue
            picked = classes[i % max(len(classes), 1):][:3] if classes else []
            picked = [c for c in picked if os.path.getsize(c) <= MAX]
            body = re.sub(r"(?ms)^classes:\n(?:\s+-.*\n)*", "", read(tp))
            head = "classes:\n" + "".join(f"  - c{j}\n" for j in range(len(picked))) if picked else ""
            write(outdir, "inventory", SEP.join([head + body] + [read(c) for c in picked]), 400)
    # overlay: each template directory's config with its overlay, and the
    # ytt upstream examples one by one.
    for base, _, names in sorted(os.walk(os.path.join(FIX, "template"))):
        if "config.yml" in names:
            ov = read(os.path.join(base, "overlay.yml")) if "overlay.yml" in names else ""
            write(outdir, "overlay", read(os.path.join(base, "config.yml")) + SEP + ov, 400)
    for p in files("ytt-upstream"):
        write(outdir, "overlay", read(p), 400)
    # redact: old/new pairs from the review catalogs, and every catalog file alone.
    for p in files("review", "order"):
        other = p.replace("/new/", "/old/")
        old = read(other) if other != p and os.path.isfile(other) else ""
        write(outdir, "redact", old + SEP + read(p), 400)


if __name__ == "__main__":
    main()
