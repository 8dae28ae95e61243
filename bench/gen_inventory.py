#!/usr/bin/env python3
"""Generate a large, deterministic Kapitan/reclass inventory for benchmarking.

Usage: gen_inventory.py OUT_DIR TARGETS [--seed N]

Writes OUT_DIR/classes/... and OUT_DIR/targets/... (OUT_DIR is wiped first).
The same (TARGETS, seed) always gives byte-identical files, and the first K
targets of a bigger inventory are identical to those of a smaller one, so the
100- and 1,000-target inventories can be compared target by target.

Shape (5 levels; a target includes one cluster, the rest follows by includes):

  target t-NNNN
    -> cluster.kCCC                      (150 classes, level 5)
       -> tenant.facts.tTT               (40 classes: plain facts for class names)
       -> tenant.tTT                     (40 classes, level 4)
          -> cloud.${facts:cloud}.${facts:region}     interpolated class name
             (32 classes, level 3) -> region.RR, .common (relative name)
             -> region.RR                (8 classes, level 2) -> region.RR.network (8),
                global.common            (level 1) -> global.defaults,
                                          global.components.cNN (60 classes)
          -> global.profiles.${facts:profile}          interpolated (5 classes)

Features used: nested includes, depth-first merge with dedupe, relative class
names, `${...}` in class names, maps deep-merging across all levels, lists
appending, `~key` overrides, references inside strings, whole-value references
(int, bool, map, list), references to references (chains up to 4 deep), nested
references `${a:${b}}`, and `${_reclass_:...}`. Only features on which
reclass-rs 0.11 and Kapitan 0.36's reclass backend agree are used: no
`${x::default}`, no YAML 1.1/1.2-ambiguous scalars (every string is emitted
double-quoted), no duplicate keys, no floats, no null, no prefixed keys inside
lists, no references inside class-name reference values.

Every target renders to more than 2,000 leaf parameters.

With --platform every target also includes `platform`, a class whose
compile entry runs one jsonnet component (components/platform.jsonnet,
written by bench/pr-loop.sh) that writes a Deployment and a ConfigMap per
enabled component: the platform of issue 18 (bench/pr-loop.sh).
"""
import argparse
import json
import os
import random
import shutil

N_COMPONENTS = 60
N_SETTINGS = 12
REGIONS = ["eu1", "eu2", "us1", "us2", "ap1", "ap2", "sa1", "af1"]
CLOUDS = ["aws", "gcp", "azure", "exoscale"]
PROFILES = ["small", "medium", "large", "edge", "gpu"]
N_TENANTS = 40
N_CLUSTERS = 150


def comp(n):
    return "c%02d" % n


# --- a tiny YAML block emitter (strings always double-quoted JSON style) ---


def scalar(v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, str):
        return json.dumps(v)
    raise TypeError(type(v))


def emit(v, indent=0):
    pad = "  " * indent
    out = []
    if isinstance(v, dict):
        for k, x in v.items():
            assert isinstance(k, str) and k and not k.startswith(("-", "?", "#")), k
            if isinstance(x, (dict, list)) and x:
                out.append("%s%s:" % (pad, k))
                out.extend(emit(x, indent + 1))
            elif isinstance(x, dict):
                out.append("%s%s: {}" % (pad, k))
            elif isinstance(x, list):
                out.append("%s%s: []" % (pad, k))
            else:
                out.append("%s%s: %s" % (pad, k, scalar(x)))
    elif isinstance(v, list):
        for x in v:
            if isinstance(x, dict) and x:
                sub = emit(x, indent + 1)
                out.append("%s- %s" % (pad, sub[0].lstrip()))
                out.extend(sub[1:])
            elif isinstance(x, (dict, list)):
                raise ValueError("no empty/nested collections in lists")
            else:
                out.append("%s- %s" % (pad, scalar(x)))
    return out


def write(root, rel, doc):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write("\n".join(emit(doc)) + "\n")


# --- the classes ---


def component_class(n, rng):
    c = comp(n)
    p = c
    settings = {}
    for k in range(N_SETTINGS):
        key = "k%02d" % k
        kind = (n + k) % 6
        if kind == 0:
            settings[key] = "%s-%s-${facts:region}" % (c, key)
        elif kind == 1:
            settings[key] = rng.randint(1, 100000)
        elif kind == 2:
            settings[key] = (n * k) % 2 == 0
        elif kind == 3:
            settings[key] = "${%s:%s}" % (p, "port")  # whole-value int
        elif kind == 4:
            settings[key] = "prefix-${%s:host}-suffix" % p  # ref to ref chain
        else:
            settings[key] = "v%d-%s" % (rng.randint(0, 999), rng.choice(["alpha", "beta", "stable"]))
    body = {
        "name": c,
        "namespace": "syn-${facts:tenant}-%s" % c,
        "enabled": True,
        "enabled_text": "enabled=${%s:enabled}" % p,
        "replicas": 2,
        "port": 8000 + n,
        "image": {
            "registry": "${global:registry}",
            "repository": "${%s:image:registry}/syn/%s" % (p, c),
            "tag": "${components:%s:version}" % c,
            "full": "${%s:image:repository}:${%s:image:tag}" % (p, p),
        },
        "host": "%s.${facts:domain}" % c,
        "url": "https://${%s:host}:${%s:port}/" % (p, p),
        "resources": {
            "requests": {"cpu": "100m", "memory": "128Mi"},
            "limits": {"cpu": "500m", "memory": "512Mi"},
        },
        "labels": {
            "app.kubernetes.io/name": c,
            "app.kubernetes.io/instance": "${facts:cluster}-%s" % c,
            "region": "${facts:region}",
            "tenant": "${facts:tenant}",
        },
        "args": ["--log-level=info", "--port=${%s:port}" % p],
        "env": {
            "REGION": "${facts:region}",
            "CLUSTER": "${facts:cluster}",
            "REPLICAS": "${%s:replicas}" % p,
            "ZONE_LIST": "${region:zones}",
        },
        "settings": settings,
        "replicas_copy": "${%s:replicas}" % p,
        "selector": "${%s:labels}" % p,
        "profile_size": "${profiles:${facts:profile}:size}",
    }
    return {
        "parameters": {
            "components": {
                c: {
                    "url": "https://git.example.com/syn/component-%s.git" % c,
                    "version": "v1.%d.0" % n,
                }
            },
            c: body,
        }
    }


def gen_classes(root, rng):
    count = 0

    def put(name, doc):
        nonlocal count
        write(root, "classes/" + name.replace(".", "/") + ".yml", doc)
        count += 1

    # level 1: global
    for n in range(N_COMPONENTS):
        put("global.components." + comp(n), component_class(n, rng))
    put(
        "global.defaults",
        {
            "parameters": {
                "global": {
                    "registry": "docker.io",
                    "log_level": "info",
                    "ntp": ["0.pool.ntp.org", "1.pool.ntp.org"],
                    "dns": {"search": ["svc.cluster.local"], "ttl": 300},
                },
                "profiles": {
                    p: {"size": p, "nodes": 3 + i, "label": "profile-%s" % p}
                    for i, p in enumerate(PROFILES)
                },
                "meta": {
                    "generated_by": "strata bench",
                    "summary": "${facts:tenant}/${facts:cluster} in ${facts:region} on ${cloud:provider}",
                },
            }
        },
    )
    put(
        "global.common",
        {
            "classes": ["global.defaults"]
            + ["global.components." + comp(n) for n in range(N_COMPONENTS)],
            "parameters": {"global": {"ntp": ["2.pool.ntp.org"]}},
        },
    )
    for i, p in enumerate(PROFILES):
        comps = {}
        for n in range(N_COMPONENTS):
            if (n + i) % 5 == 0:
                comps[comp(n)] = {"replicas": 1 + i, "args": ["--profile=%s" % p]}
        put(
            "global.profiles." + p,
            {
                "classes": ["global.common"],
                "parameters": {
                    "profile": {"name": p, "settings": "${profiles:%s}" % p},
                    **comps,
                },
            },
        )

    # level 2: regions
    for ri, r in enumerate(REGIONS):
        put(
            "region.%s.network" % r,
            {
                "parameters": {
                    "network": {
                        "cidr": "10.%d.0.0/16" % ri,
                        "pods": "10.%d.128.0/17" % ri,
                        "gateway": "10.%d.0.1" % ri,
                        "mtu": 1500 - ri,
                    }
                }
            },
        )
        comps = {}
        for n in range(N_COMPONENTS):
            entry = {"args": ["--region=${facts:region}"]}
            if (n + ri) % 3 == 0:
                entry["replicas"] = 3
            if (n + ri) % 7 == 0:
                entry["env"] = {"GATEWAY": "${network:gateway}"}
            comps[comp(n)] = entry
        put(
            "region." + r,
            {
                "classes": ["global.common", "region.%s.network" % r],
                "parameters": {
                    "region": {
                        "name": r,
                        "zones": ["%s-a" % r, "%s-b" % r, "%s-c" % r],
                        "network": "${network}",
                    },
                    "global": {"ntp": ["ntp.%s.example.net" % r]},
                    **comps,
                },
            },
        )

    # level 3: clouds
    for ci, cl in enumerate(CLOUDS):
        comps = {}
        for n in range(N_COMPONENTS):
            if n % 4 == ci:
                comps[comp(n)] = {
                    "~resources": {
                        "requests": {"cpu": "200m", "memory": "256Mi"},
                        "limits": {"memory": "1Gi"},
                    }
                }
        put(
            "cloud.%s.common" % cl,
            {
                "parameters": {
                    "cloud": {
                        "provider": cl,
                        "registry": "registry.%s.example.net" % cl,
                        "storage_class": "%s-ssd" % cl,
                    },
                    "global": {"registry": "${cloud:registry}"},
                    **comps,
                }
            },
        )
        for ri, r in enumerate(REGIONS):
            comps = {}
            for n in range(N_COMPONENTS):
                if (n + ci + ri) % 4 == 0:
                    comps[comp(n)] = {"image": {"tag": "v1.%d.%d" % (n, ci + 1)}}
            put(
                "cloud.%s.%s" % (cl, r),
                {
                    "classes": ["region." + r, ".common"],
                    "parameters": {
                        "cloud": {
                            "endpoint": "https://${facts:region}.${cloud:provider}.example.net",
                            "zones": "${region:zones}",
                        },
                        **comps,
                    },
                },
            )

    # level 4: tenants
    for t in range(N_TENANTS):
        tn = "t%02d" % t
        put(
            "tenant.facts." + tn,
            {
                "parameters": {
                    "facts": {
                        "tenant": tn,
                        "cloud": CLOUDS[t % len(CLOUDS)],
                        "region": REGIONS[(t // len(CLOUDS)) % len(REGIONS)],
                        "profile": PROFILES[t % len(PROFILES)],
                    }
                }
            },
        )
        comps = {}
        for n in range(N_COMPONENTS):
            if (n + t) % 6 == 0:
                comps[comp(n)] = {
                    "~labels": {
                        "app.kubernetes.io/name": comp(n),
                        "tenant": "${tenant:id}",
                        "owner": "${tenant:owner}",
                    }
                }
            elif (n + t) % 6 == 3:
                comps[comp(n)] = {"settings": {"tenant_note": "owned by ${tenant:owner}"}}
        put(
            "tenant." + tn,
            {
                "classes": [
                    "cloud.${facts:cloud}.${facts:region}",
                    "global.profiles.${facts:profile}",
                ],
                "parameters": {
                    "tenant": {
                        "id": "${facts:tenant}",
                        "owner": "team-${tenant:id}",
                        "contact": "${tenant:owner}@example.com",
                        "budget": rng.randint(1000, 100000),
                    },
                    **comps,
                },
            },
        )

    # level 5: clusters
    for k in range(N_CLUSTERS):
        kn = "k%03d" % k
        tn = "t%02d" % (k % N_TENANTS)
        comps = {}
        for n in range(N_COMPONENTS):
            roll = rng.random()
            if roll < 0.15:
                comps[comp(n)] = {"enabled": False}
            elif roll < 0.35:
                comps[comp(n)] = {
                    "replicas": rng.randint(1, 9),
                    "args": ["--cluster=${facts:cluster}"],
                }
        put(
            "cluster." + kn,
            {
                "classes": ["tenant.facts." + tn, "tenant." + tn],
                "parameters": {
                    "facts": {
                        "cluster": kn,
                        "domain": "${facts:cluster}.${facts:region}.example.com",
                    },
                    "cluster": {
                        "name": "${facts:cluster}",
                        "api": "https://api.${facts:domain}:6443",
                        "console": "https://console.${facts:domain}",
                        "nodes": rng.randint(3, 60),
                        "zones": "${cloud:zones}",
                        "summary": "${meta:summary}",
                    },
                    **comps,
                },
            },
        )
    return count


PLATFORM_CLASS = {
    "parameters": {
        "kapitan": {
            "vars": {"target": "${_reclass_:name:short}"},
            "compile": [
                {
                    "input_type": "jsonnet",
                    "input_paths": ["components/platform.jsonnet"],
                    "output_path": "manifests",
                    "output_type": "yaml",
                }
            ],
        }
    }
}


def gen_target(root, i, rng, platform=False):
    name = "t-%04d" % i
    k = rng.randrange(N_CLUSTERS)
    comps = {}
    for n in rng.sample(range(N_COMPONENTS), 6):
        comps[comp(n)] = {
            "replicas": rng.randint(1, 5),
            "args": ["--target=${target:name}"],
            "settings": {"index": i},
        }
    write(
        root,
        "targets/%s.yml" % name,
        {
            "classes": ["cluster.k%03d" % k] + (["platform"] if platform else []),
            "parameters": {
                "target": {
                    "name": "${_reclass_:name:short}",
                    "index": i,
                    "cluster": "${cluster:name}",
                    "url": "${cluster:api}/targets/${target:name}",
                },
                **comps,
            },
        },
    )


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("targets", type=int)
    ap.add_argument("--seed", type=int, default=20261121)
    ap.add_argument("--platform", action="store_true", help="add the compile entry (see above)")
    a = ap.parse_args()
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    ncls = gen_classes(a.out, random.Random(a.seed))
    if a.platform:
        write(a.out, "classes/platform.yml", PLATFORM_CLASS)
        ncls += 1
    for i in range(a.targets):
        # one RNG per target, so a target does not depend on the target count
        gen_target(a.out, i, random.Random("%d/%d" % (a.seed, i)), a.platform)
    print("generated %s: %d classes, %d targets" % (a.out, ncls, a.targets))


if __name__ == "__main__":
    main()
