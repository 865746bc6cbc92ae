#!/usr/bin/env python3
"""Dependency feature pins for hack/check-corpus.sh's scratch crate.

Usage: corpus-pins.py [--report] WORKSPACE_FEATURES CRATE_FEATURES [HOST_PACKAGES]
       corpus-pins.py --host < METADATA_JSON

Both files hold `cargo tree -f '{p}|{f}' --prefix none` lines: the workspace's (as
`cargo test --workspace` resolves it) and the scratch crate's. For every package of the
crate whose feature set is not one the workspace builds, prints a dependency line that
asks for the workspace's set, so the crate's build reuses the workspace's artifacts.
A package the workspace builds with two feature sets (one for build scripts and proc
macros, one for the code) is pinned to the larger set that contains the crate's.
HOST_PACKAGES (one name per line, from --host) tells the packages built for build
scripts and proc macros from those only the code uses.
With --report, prints how many of the crate's packages match instead.
With --host, prints the names of the packages `cargo metadata` (on stdin) builds for
the host: proc macros, build dependencies, and everything they depend on. Only those
need a pin among the crate's build dependencies: a pin there makes cargo build the
package for build scripts too, with the build-override profile (a second build of,
say, kube-client that no build script uses).
"""
import json
import re
import sys

LINE = re.compile(r"^(\S+) v(\S+)(?: \((.*)\))?\|(.*)$")


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


def host_packages(meta):
    nodes = {n["id"]: n for n in meta["resolve"]["nodes"]}
    packages = {p["id"]: p for p in meta["packages"]}
    roots = set()
    for node in nodes.values():
        for dep in node["deps"]:
            if any(k["kind"] == "build" for k in dep["dep_kinds"]):
                roots.add(dep["pkg"])
    for pid, pkg in packages.items():
        if any("proc-macro" in t["kind"] for t in pkg["targets"]):
            roots.add(pid)
    seen, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        todo.extend(d["pkg"] for d in nodes[pid]["deps"]
                    if any(k["kind"] in (None, "build") for k in d["dep_kinds"]))
    return sorted({packages[pid]["name"] for pid in seen})


def main(argv):
    if argv == ["--host"]:
        print("\n".join(host_packages(json.load(sys.stdin))))
        return
    report = argv[:1] == ["--report"]
    if report:
        argv = argv[1:]
    if len(argv) not in (2, 3):
        sys.exit(__doc__)
    host = None
    if len(argv) == 3:
        host = set(open(argv[2], encoding="utf-8").read().split())
        argv = argv[:2]
    workspace, crate = read(argv[0]), read(argv[1])
    pins, matched, unmatched = [], 0, []
    for key in sorted(crate):
        name, version, source = key
        if name in ("corpus-batch", "corpus-batch-b"):
            continue
        want = workspace.get(key)
        for feats in sorted(crate[key], key=sorted):
            # A package the workspace builds twice (for the host and for the code) is
            # listed with two sets, and the code's is the larger: a package only the
            # code uses must have that one, not the host's.
            code_only = host is not None and name not in host
            if want and feats in want and (not code_only or len(feats) == max(map(len, want))):
                matched += 1
                continue
            bigger = sorted((w for w in (want or ()) if feats <= w), key=len)
            if not bigger:
                unmatched.append(f"{name} v{version}")
                continue
            target = bigger[-1] if len(bigger) > 1 else bigger[0]
            alias = name
            where = f'path = "{source}"' if source and source.startswith("/") else f'version = "={version}"'
            flist = ", ".join(f'"{f}"' for f in sorted(target) if f != "default")
            default = "true" if "default" in target else "false"
            pins.append(
                f'{alias} = {{ {where}, default-features = {default}, features = [{flist}] }}'
            )
    if report:
        extra = f"; not built by the workspace: {', '.join(unmatched)}" if unmatched else ""
        print(f"{matched} of {matched + len(pins) + len(unmatched)} packages match the workspace's features{extra}")
        return
    # One line per package (the last of two feature sets wins); a name with two
    # versions gets an alias per version.
    seen = {}
    for pin in pins:
        seen[(pin.split(" ", 1)[0], pin.split("version = ", 1)[-1][:16])] = pin
    names = [k[0] for k in seen]
    out = []
    for (name, _), pin in seen.items():
        if names.count(name) > 1:
            ver = re.search(r'version = "=([^"]+)"', pin)
            alias = "pin_" + re.sub(r"[^a-z0-9]", "_", f"{name}_{ver.group(1) if ver else 'path'}")
            pin = f"{alias} = {{ package = \"{name}\", " + pin.split("{ ", 1)[1]
        out.append(pin)
    print("\n".join(out))


main(sys.argv[1:])
