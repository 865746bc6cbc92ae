#!/usr/bin/env python3
"""Dependency feature pins for hack/check-corpus.sh's scratch workspace.

Usage: corpus-pins.py [--report] WS_ALL WS_CODE CRATE_ALL CRATE_CODE HOST_PACKAGES
       corpus-pins.py --host [ROOT_PACKAGE] < METADATA_JSON

The first four files hold `cargo tree -f '{p}|{f}' --prefix none` lines: the
workspace's (as `cargo test --workspace` resolves it) and the scratch crate's, each
twice: every edge (`-e normal,build[,dev]`, the code's and the host's builds), and the
code's alone (`-e normal[,dev],no-proc-macro`). HOST_PACKAGES (one name per line, from
--host) names the crate's packages that build scripts and proc macros use.

Cargo builds a package at most twice: once for the code, once for build scripts and
proc macros (the host) when their features differ (a package the two use with the same
features is one build). A package's sets in the `-e normal,build` tree are those two;
its set in the code's tree tells which one is the code's. For every build of the crate
whose features are not the workspace's build of the same side, prints a dependency line
that asks for the workspace's set, so that the crate's build reuses the workspace's
artifacts:
- a code pin, `name = { ... }`, for the crate's [dependencies];
- a host pin, `host: name = { ... }`, for its [build-dependencies] (the host's features
  are resolved apart from the code's; a host pin on a package only the code uses would
  build it a second time, for the host).
With --report, prints how many of the crate's builds match the workspace's instead.
With --host, prints the names of the packages `cargo metadata` (on stdin) builds for
the host: proc macros, build dependencies, and everything they depend on; with
ROOT_PACKAGE, only among what that package builds (the other members of its workspace
are not built with it).
"""
import json
import re
import sys

LINE = re.compile(r"^(\S+) v(\S+)(?: \((.*)\))?\|(.*)$")
CORPUS = ("corpus-batch", "corpus-batch-b")


def read(path):
    sets = {}
    for line in open(path, encoding="utf-8"):
        m = LINE.match(line.strip())
        if not m:
            continue
        name, version, source, features = m.groups()
        feats = frozenset(f for f in features.split(",") if f)
        sets.setdefault((name, version, source), set()).add(feats)
    return sets


def closure(nodes, start, kinds):
    """The packages reachable from `start` over dependency edges of the given kinds."""
    seen, todo = set(), list(start)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(d["pkg"] for d in nodes[pid]["deps"]
                    if any(k["kind"] in kinds for k in d["dep_kinds"]))
    return seen


def host_packages(meta, root=None):
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    packages = {p["id"]: p for p in meta["packages"]}
    if root is not None:
        start = [pid for pid, p in packages.items() if p["name"] == root]
        if not start:
            sys.exit(f"corpus-pins.py: package {root} is not in the metadata")
        built = closure(nodes, start, (None, "build"))
        nodes = {pid: n for pid, n in nodes.items() if pid in built}
        packages = {pid: p for pid, p in packages.items() if pid in built}
    roots = set()
    for node in nodes.values():
        for dep in node["deps"]:
            if any(k["kind"] == "build" for k in dep["dep_kinds"]):
                roots.add(dep["pkg"])
    for pid, pkg in packages.items():
        if any("proc-macro" in t["kind"] for t in pkg["targets"]):
            roots.add(pid)
    seen = closure(nodes, roots, (None, "build"))
    return sorted({packages[pid]["name"] for pid in seen})


def code_set(code, key):
    """The code's feature set of a package (None: the code does not use it)."""
    sets = code.get(key)
    return max(sets, key=len) if sets else None


def sides(all_sets, code, key, host_used):
    """The code's set and the host's set of a package (each None when unused)."""
    c = code_set(code, key)
    rest = all_sets.get(key, set()) - {c}
    if rest:
        return c, max(rest, key=len)
    return c, (c if host_used else None)


def pin(key, feats):
    name, version, source = key
    where = f'path = "{source}"' if source and source.startswith("/") else f'version = "={version}"'
    flist = ", ".join(f'"{f}"' for f in sorted(feats) if f != "default")
    default = "true" if "default" in feats else "false"
    return name, version, f'{{ {where}, default-features = {default}, features = [{flist}] }}'


def main(argv):
    if argv[:1] == ["--host"] and len(argv) <= 2:
        root = argv[1] if len(argv) == 2 else None
        print("\n".join(host_packages(json.load(sys.stdin), root)))
        return
    report = argv[:1] == ["--report"]
    if report:
        argv = argv[1:]
    if len(argv) != 5:
        sys.exit(__doc__)
    ws_all, ws_code, crate_all, crate_code = (read(p) for p in argv[:4])
    host = set(open(argv[4], encoding="utf-8").read().split())
    pins, matched, unmatched = [], 0, []
    for key in sorted(crate_all):
        name, version, _ = key
        if name in CORPUS:
            continue
        c, h = sides(crate_all, crate_code, key, name in host)
        # The workspace's host build: its set apart from the code's, or the code's one
        # build when they are the same.
        wc, wh = sides(ws_all, ws_code, key, True)
        for side, have, want in (("", c, wc), ("host: ", h, wh)):
            if have is None:
                continue
            if have == want:
                matched += 1
            elif want is not None and have <= want:
                pins.append((side, *pin(key, want)))
            else:
                unmatched.append(f"{side}{name} v{version}")
    if report:
        extra = f"; not built by the workspace: {', '.join(unmatched)}" if unmatched else ""
        print(f"{matched} of {matched + len(pins) + len(unmatched)} builds match the workspace's features{extra}")
        return
    # A name with two versions on one side gets an alias per version.
    out = []
    for side, name, version, spec in pins:
        alias = name
        if sum(1 for s, n, _, _ in pins if (s, n) == (side, name)) > 1:
            alias = "pin_" + re.sub(r"[^a-z0-9]", "_", f"{name}_{version}")
            spec = f'{{ package = "{name}", ' + spec[2:]
        out.append(f"{side}{alias} = {spec}")
    print("\n".join(out))


main(sys.argv[1:])
