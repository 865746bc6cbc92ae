#!/usr/bin/env bash
# The differential suite: the same requests to kubegen's in-memory API server and to a
# real kube-apiserver (hack/real-apiserver.sh), the answers compared, the report written
# to docs/differential.md.
#
# Usage: hack/differential.sh [ARGS...]   (ARGS go to the `differential` binary, e.g.
#                                          --families crud,watch or --crd-limit 10)
#
# It builds the binary, starts the real control plane unless one already runs in
# REAL_APISERVER_DIR (a fresh etcd, so nothing is left from an earlier run), runs the
# suite, and stops the control plane if it started it. The exit status is the binary's:
# 0 when every disagreeing case is listed in tests/differential/known-differences.txt,
# 1 when one is not (a regression of the in-memory server, or a fix: update the list),
# 2 when the harness failed.
#
# Environment: REAL_APISERVER_PORT (6560 here; etcd and the controller manager take the
# next three ports), REAL_APISERVER_DIR (target/real-apiserver/differential),
# CRD_CORPUS (../shared/crds), and what hack/real-apiserver.sh reads.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/features.sh
target=${CARGO_TARGET_DIR:-$PWD/target}
export REAL_APISERVER_PORT=${REAL_APISERVER_PORT:-6560}
export REAL_APISERVER_DIR=${REAL_APISERVER_DIR:-$target/real-apiserver/differential}
corpus=${CRD_CORPUS:-../shared/crds}

# The workspace's test features (hack/test.sh): the test stage built this binary.
workspace_build --bin differential

started=
if hack/real-apiserver.sh status >/dev/null 2>&1; then
  echo "differential: using the control plane already running in $REAL_APISERVER_DIR (objects from earlier runs may remain)" >&2
else
  hack/real-apiserver.sh start
  started=1
fi
stop() { [ -z "$started" ] || hack/real-apiserver.sh stop; }
trap stop EXIT

status=0
"$target/debug/differential" --kubeconfig "$REAL_APISERVER_DIR/kubeconfig" \
  --report docs/differential.md --known tests/differential/known-differences.txt \
  --crds "$corpus" "$@" || status=$?
exit "$status"
