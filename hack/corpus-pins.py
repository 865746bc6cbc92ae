#!/usr/bin/env python3
"""Dependency feature pins for hack/check-corpus.sh's scratch crate.

Usage: corpus-pins.py [--report] WORKSPACE_FEATURES CRATE_FEATURES

Both files hold `cargo tree -f '{p}|{f}' --prefix none` lines: the workspace's (as
`cargo test --workspace` resolves it) and the scratch crate's. For every package of the
crate whose feature set is not one the workspace builds, prints a dependency line that
asks for the workspace's set, so the crate's build reuses the workspace's artifacts.
A package the workspace builds with two feature sets (one for build scripts and proc
macros, one for the code) is pinned to the larger set that contains the crate's.
With --report, prints how many of the crate's packages match instead.
"""
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


def main(argv):
    report = argv[:1] == ["--report"]
    if report:
        argv = argv[1:]
    if len(argv) != 2:
        sys.exit(__doc__)
    workspace, crate = read(argv[0]), read(argv[1])
    pins, matched, unmatched = [], 0, []
    for key in sorted(crate):
        name, version, source = key
        if name == "corpus-batch":
            continue
        want = workspace.get(key)
        for feats in sorted(crate[key], key=sorted):
            if want and feats in want:
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
