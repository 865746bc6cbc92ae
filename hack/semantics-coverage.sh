#!/usr/bin/env bash
# Lists SEMANTICS cases (from ../shared/SEMANTICS.md) that no test names with a
# `// SEMANTICS n.m` comment and docs/SEMANTICS-NA.md does not list. Exit 1 if any.
# Usage: hack/semantics-coverage.sh [SECTION...]   (default: every section)
set -euo pipefail
cd "$(dirname "$0")/.."
spec=${SEMANTICS_MD:-../shared/SEMANTICS.md}
if [ ! -f "$spec" ]; then
  # CI always has shared/ beside the clone; a worktree elsewhere may not.
  if [ "${CI:-}" = "true" ]; then
    echo "no $spec: cannot check SEMANTICS coverage (set SEMANTICS_MD)" >&2; exit 1
  fi
  echo "WARNING: no $spec (set SEMANTICS_MD to check SEMANTICS coverage); not checked" >&2
  exit 0
fi
python3 - "$spec" "$@" <<'PY'
import re, sys, pathlib
spec, sections = sys.argv[1], set(sys.argv[2:])
cases, sec = [], None
for line in open(spec, encoding="utf-8"):
    m = re.match(r"## (\d+)\.", line)
    if m:
        sec = m.group(1)
        continue
    m = re.match(r"(\d+)\. ", line)
    if sec and m and (not sections or sec in sections):
        cases.append(f"{sec}.{m.group(1)}")
named = set()
for p in pathlib.Path(".").rglob("*.rs"):
    if "target" in p.parts:
        continue
    for m in re.finditer(r"SEMANTICS ([\d., ]+)", p.read_text(encoding="utf-8", errors="ignore")):
        for part in re.split(r"[, ]+", m.group(1)):
            if re.fullmatch(r"\d+\.\d+", part):
                named.add(part)
na = set(re.findall(r"^- (\d+\.\d+):", pathlib.Path("docs/SEMANTICS-NA.md").read_text(), re.M))
missing = [c for c in cases if c not in named and c not in na]
print(f"{len(cases)} cases, {len([c for c in cases if c in named])} named in tests, {len([c for c in cases if c in na and c not in named])} not applicable, {len(missing)} missing")
if missing:
    print("missing: " + " ".join(missing))
    sys.exit(1)
PY
