#!/usr/bin/env python3
"""Render an inventory with a peer implementation, for bench/inventory.sh.

Usage: peers.py rs|kapitan INVENTORY_DIR [OUT_JSON]

  rs       reclass-rs through its Python API (Config.from_dict with Kapitan's
           reclass config, Reclass.from_config, .inventory()), as Kapitan's
           reclass-rs backend and Commodore call it.
  kapitan  Kapitan's "reclass" backend: kapicorp-reclass's Core with the
           config Kapitan builds (kapitan.inventory.backends.reclass).

Writes {"nodes": {name: {"classes", "applications", "parameters"}}} as JSON to
OUT_JSON (default: /dev/null), the same shape `strata inventory --format json`
prints, and one line of timings on stderr:
  PEER-TIMES {"import_s": .., "render_s": .., "dump_s": .., "targets": N,
              "min_leaves": .., "max_leaves": ..}
render_s covers rendering the whole inventory into Python objects; the
process's wall time (measured outside) also covers interpreter start-up,
imports and writing the JSON, like strata's does.
"""
import json
import logging
import sys
import time

logging.basicConfig(level=logging.ERROR)


def leaves(v):
    if isinstance(v, dict):
        return sum(leaves(x) for x in v.values())
    if isinstance(v, list):
        return sum(leaves(x) for x in v) if v else 1
    return 1


def main():
    backend, inv = sys.argv[1], sys.argv[2]
    out_path = sys.argv[3] if len(sys.argv) > 3 else "/dev/null"
    t0 = time.perf_counter()
    from kapitan.inventory.backends.reclass import get_reclass_config

    if backend == "rs":
        import reclass_rs

        t1 = time.perf_counter()
        cfg = get_reclass_config(inv, False, False, False)
        config = reclass_rs.Config.from_dict(inv, cfg, False)
        res = reclass_rs.Reclass.from_config(config).inventory()
        # Inventory.nodes builds a new dict on every access: read it once
        # (looking it up per target makes the driver quadratic).
        res_nodes = res.nodes
        nodes = {}
        for name in sorted(res_nodes):
            n = res_nodes[name]
            nodes[name] = {
                "classes": list(n.classes),
                "applications": list(n.applications),
                "parameters": n.parameters,
            }
    elif backend == "kapitan":
        import reclass
        import reclass.core
        import reclass.settings

        t1 = time.perf_counter()
        cfg = get_reclass_config(inv, False, False, True)
        storage = reclass.get_storage(
            cfg["storage_type"], cfg["nodes_uri"], cfg["classes_uri"], cfg["compose_node_name"]
        )
        core = reclass.core.Core(storage, cfg.get("class_mappings"), reclass.settings.Settings(cfg))
        res = core.inventory()
        nodes = {}
        for name in sorted(res["nodes"]):
            n = res["nodes"][name]
            nodes[name] = {
                "classes": list(n["classes"]),
                "applications": list(n["applications"]),
                "parameters": n["parameters"],
            }
    else:
        sys.exit("unknown backend %r (rs or kapitan)" % backend)
    t2 = time.perf_counter()
    with open(out_path, "w") as f:
        json.dump({"nodes": nodes}, f, default=str)
    t3 = time.perf_counter()
    counts = [leaves({k: v for k, v in n["parameters"].items() if k != "_reclass_"}) for n in nodes.values()]
    times = {
        "import_s": round(t1 - t0, 3),
        "render_s": round(t2 - t1, 3),
        "dump_s": round(t3 - t2, 3),
        "targets": len(nodes),
        "min_leaves": min(counts) if counts else 0,
        "max_leaves": max(counts) if counts else 0,
    }
    sys.stderr.write("PEER-TIMES " + json.dumps(times) + "\n")


if __name__ == "__main__":
    main()
