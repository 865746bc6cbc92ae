#!/usr/bin/env bash
# Counts the lines of the Backup operator proper (between the `operator: begin` and
# `operator: end` markers: no blank lines, no comment lines; types, CRD and demo harness
# aside) on kubegen's controller builder and on kube-runtime, both as rustfmt leaves them.
# See docs/controller.md.
set -euo pipefail
cd "$(dirname "$0")/.."
count() {
  awk '/operator: begin/{f=1;next}/operator: end/{f=0}f' "$1" | grep -v '^\s*$' | grep -cv '^\s*//'
}
k=$(count runtime/examples/backup_operator.rs)
r=$(count benchmarks/operator-loc/kube_runtime_backup_operator.rs)
echo "kubegen controller builder: $k lines (runtime/examples/backup_operator.rs)"
echo "kube-runtime Controller:    $r lines (benchmarks/operator-loc/kube_runtime_backup_operator.rs)"
python3 -c "print(f'ratio: {$k/$r:.2f}x')"
