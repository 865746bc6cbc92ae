#!/usr/bin/env bash
# Runs real kubectl against kubegen-apiserver and checks what it prints: the commands a
# user tries first (create, apply, server-side apply, get with tables, explain, delete
# namespace, raw health and version; quota, pdb, priorityclass, autoscale, create token,
# drain), with no flags beyond the kubeconfig.
#
# Usage: hack/kubectl-e2e.sh
#   KUBECTL: the kubectl to use (default: kubectl on PATH). Missing kubectl fails when
#   CI=true and skips loudly otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
. hack/features.sh

kubectl_bin=${KUBECTL:-kubectl}
if ! command -v "$kubectl_bin" >/dev/null 2>&1; then
  if [ "${CI:-}" = "true" ]; then
    echo "kubectl-e2e: kubectl not found (set KUBECTL); CI requires it" >&2
    exit 1
  fi
  echo "=================================================================" >&2
  echo "kubectl-e2e: SKIPPED: kubectl not found (set KUBECTL to run it)" >&2
  echo "=================================================================" >&2
  exit 0
fi

# The workspace's test features (hack/test.sh), so the binary the test stage built is
# reused rather than rebuilt with the apiserver's own feature set.
nice -n 10 bash -c '. hack/features.sh && workspace_build --bin kubegen-apiserver'
bin=${CARGO_TARGET_DIR:-target}/debug/kubegen-apiserver

work=$(mktemp -d)
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then
    kill "$server_pid" 2>/dev/null || true
    wait "$server_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

fail() {
  echo "kubectl-e2e: FAIL: $*" >&2
  if [ -f "$work/server.log" ]; then
    echo "--- server log" >&2
    cat "$work/server.log" >&2
  fi
  exit 1
}

# A free port: bind to 0 and read it back, then hand it to the server.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')

mkdir -p "$work/crds"
cat >"$work/crds/gizmos.yaml" <<'EOF'
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: gizmos.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, shortNames: [gz], categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
    - {name: Mode, type: string, jsonPath: .spec.mode, priority: 1}
    schema:
      openAPIV3Schema:
        type: object
        description: A gizmo of the kubectl end-to-end test.
        properties:
          spec:
            type: object
            description: What the gizmo should be.
            properties:
              size: {type: integer, description: How big the gizmo is.}
              mode: {type: string}
EOF

"$bin" --port "$port" -f "$work/crds" --kubeconfig "$work/kubeconfig" >"$work/server.log" 2>&1 &
server_pid=$!
export KUBECONFIG="$work/kubeconfig"
# kubectl caches discovery and OpenAPI per host:port; keep this run's apart.
export KUBECACHEDIR="$work/cache"
for _ in $(seq 100); do
  if [ -f "$KUBECONFIG" ] && "$kubectl_bin" get --raw /readyz >/dev/null 2>&1; then break; fi
  kill -0 "$server_pid" 2>/dev/null || fail "the server exited"
  sleep 0.1
done

k() { "$kubectl_bin" "$@"; }

# expect <description> <command...>: runs it, keeps its output in $out, fails loudly.
out=
expect_ok() {
  local what=$1; shift
  if ! out=$("$@" 2>&1); then
    fail "$what: '$*' failed: $out"
  fi
}
expect_fail() {
  local what=$1; shift
  if out=$("$@" 2>&1); then
    fail "$what: '$*' succeeded but should have failed: $out"
  fi
}
has() {
  local what=$1 pattern=$2
  grep -Eq -- "$pattern" <<<"$out" || fail "$what: output does not match /$pattern/:
$out"
}

echo "kubectl-e2e: $(k version --client 2>/dev/null | head -1) against $bin on port $port"

expect_ok "raw healthz" k get --raw /healthz
[ "$out" = "ok" ] || fail "healthz: got '$out'"
expect_ok "raw readyz verbose" k get --raw '/readyz?verbose'
has "readyz" '^\[\+\]ping ok'
has "readyz" 'readyz check passed'
expect_ok "raw version" k get --raw /version
has "version" '"gitVersion": ?"v1\.[0-9]+\.[0-9]+'
has "version" '"major": ?"1"'

expect_ok "auth can-i" k auth can-i delete pods
[ "$out" = "yes" ] || fail "auth can-i: got '$out'"

expect_ok "namespaces at start" k get namespaces
for ns in default kube-node-lease kube-public kube-system; do
  has "namespaces at start" "^$ns +Active"
done

expect_ok "CRD established" k wait --for=condition=Established crd/gizmos.example.com --timeout=10s
has "CRD established" 'condition met'
sed 's/name: gizmos.example.com/name: wrong.example.com/' "$work/crds/gizmos.yaml" >"$work/bad-crd.yaml"
expect_fail "invalid CRD" k create -f "$work/bad-crd.yaml"
has "invalid CRD" 'metadata.name: Invalid value: "wrong.example.com": must be spec.names.plural\+"."\+spec.group'

expect_ok "create namespace (protobuf body)" k create namespace e2e
has "create namespace" '^namespace/e2e created$'
expect_ok "create configmap" k create configmap cm1 -n e2e --from-literal=a=b --from-literal=c=d
has "create configmap" '^configmap/cm1 created$'
expect_ok "create secret" k create secret generic s1 -n e2e --from-literal=password=hunter2
has "create secret" '^secret/s1 created$'
expect_ok "create deployment" k create deployment web -n e2e --image=nginx --replicas=2
has "create deployment" '^deployment.apps/web created$'
expect_ok "create role" k create role reader -n e2e --verb=get --resource=pods
has "create role" '^role.rbac.authorization.k8s.io/reader created$'
expect_ok "create job" k create job once -n e2e --image=busybox -- echo hi
has "create job" '^job.batch/once created$'
expect_ok "secret data" k get secret s1 -n e2e -o 'jsonpath={.data.password}'
[ "$out" = "aHVudGVyMg==" ] || fail "secret data: got '$out'"

cat >"$work/objects.yaml" <<'EOF'
apiVersion: v1
kind: ConfigMap
metadata: {name: applied, namespace: e2e}
data: {k: v1}
---
apiVersion: example.com/v1
kind: Gizmo
metadata: {name: g1, namespace: e2e}
spec: {size: 3, mode: fast}
EOF
expect_ok "apply -f (validation on)" k apply -f "$work/objects.yaml"
has "apply" '^configmap/applied created$'
has "apply" '^gizmo.example.com/g1 created$'
sed -i 's/k: v1/k: v2/; s/size: 3/size: 4/' "$work/objects.yaml"
expect_ok "apply -f again" k apply -f "$work/objects.yaml"
has "apply again" '^configmap/applied configured$'
has "apply again" '^gizmo.example.com/g1 configured$'
expect_ok "apply --server-side" k apply --server-side -f "$work/objects.yaml"
has "server-side apply" '^configmap/applied serverside-applied$'
has "server-side apply" '^gizmo.example.com/g1 serverside-applied$'
# Moving from client-side to server-side apply with a changed field takes it over
# without --force-conflicts (kube-apiserver's last-applied manager).
cat >"$work/csa.yaml" <<'YAML'
apiVersion: v1
kind: ConfigMap
metadata: {name: csa, namespace: e2e}
data: {a: "1", b: "2"}
YAML
expect_ok "client-side apply" k apply -f "$work/csa.yaml"
sed -i 's/a: "1"/a: "9"/' "$work/csa.yaml"
expect_ok "server-side apply after client-side apply" k apply --server-side -f "$work/csa.yaml"
expect_ok "server-side apply took the field" k get configmap csa -n e2e -o 'jsonpath={.data.a}'
[ "$out" = "9" ] || fail "server-side apply after client-side apply: data.a is '$out'"
cat >"$work/created.yaml" <<'EOF'
apiVersion: example.com/v1
kind: Gizmo
metadata: {name: g2, namespace: e2e}
spec: {size: 1}
EOF
expect_ok "create -f" k create -f "$work/created.yaml"
has "create -f" '^gizmo.example.com/g2 created$'
cat >"$work/unknown.yaml" <<'EOF'
apiVersion: example.com/v1
kind: Gizmo
metadata: {name: g3, namespace: e2e}
spec: {size: 1, colour: red}
EOF
expect_fail "strict field validation" k apply -f "$work/unknown.yaml"
has "strict field validation" 'unknown field "spec.colour"'

expect_ok "get gizmos" k get gizmos -n e2e
has "get gizmos" '^NAME +SIZE$'
has "get gizmos" '^g1 +4$'
has "get gizmos" '^g2 +1$'
expect_ok "get gizmos -o wide" k get gz -n e2e -o wide
has "get gizmos -o wide" '^NAME +SIZE +MODE$'
has "get gizmos -o wide" '^g1 +4 +fast$'
expect_ok "get deployments" k get deployments -n e2e
has "get deployments" '^NAME +READY +UP-TO-DATE +AVAILABLE +AGE$'
has "get deployments" '^web +0/2 +0 +0 +[0-9]+s$'
expect_ok "get deployments -o wide" k get deploy -n e2e -o wide
has "get deployments -o wide" 'CONTAINERS +IMAGES +SELECTOR$'
has "get deployments -o wide" ' nginx +nginx +app=web$'
expect_ok "get configmaps" k get configmaps -n e2e
has "get configmaps" '^NAME +DATA +AGE$'
has "get configmaps" '^cm1 +2 +'
expect_ok "get secrets" k get secrets -n e2e
has "get secrets" '^s1 +Opaque +1 +'
expect_ok "run pod" k run p1 -n e2e --image=nginx
expect_ok "get pods" k get pods -n e2e
has "get pods" '^NAME +READY +STATUS +RESTARTS +AGE$'
has "get pods" '^p1 +0/1 +Pending +0 +'
expect_ok "get all" k get all -n e2e
has "get all" '^pod/p1 '
has "get all" '^deployment.apps/web '
has "get all" '^gizmo.example.com/g1 +4$'

expect_ok "explain gizmo" k explain gizmo
has "explain gizmo" 'KIND: +Gizmo'
has "explain gizmo" 'A gizmo of the kubectl end-to-end test\.'
expect_ok "explain gizmo.spec.size" k explain gizmo.spec.size
has "explain gizmo.spec.size" 'How big the gizmo is\.'
expect_ok "explain pods" k explain pods
has "explain pods" 'KIND: +Pod'
has "explain pods" 'Pod is a collection of containers that can run on a host\.'
has "explain pods" '^  spec\s+<PodSpec>'
expect_ok "explain pods.spec.containers" k explain pods.spec.containers
has "explain pods.spec.containers" 'FIELD: +containers <\[\]Container>'
has "explain pods.spec.containers" 'A single application container that you want to run within a pod\.'
has "explain pods.spec.containers" '^  image\s+<string>'
has "explain pods.spec.containers" 'Container image name\.'
has "explain pods.spec.containers" '^  name\s+<string> -required-'
expect_ok "explain deployments.spec.replicas" k explain deployments.spec.replicas
has "explain deployments.spec.replicas" 'Number of desired pods\.'

# The rest of the GA built-in kinds, the create-only subresources and autoscaling/v1.
expect_ok "create quota" k create quota q1 -n e2e --hard=cpu=1,memory=1G
expect_ok "get quota" k get quota -n e2e
has "get quota" '^NAME +AGE +REQUEST +LIMIT$'
has "get quota" '^q1 +.* +cpu: 0/1, memory: 0/1G'
expect_ok "create pdb" k create poddisruptionbudget pdb1 -n e2e --selector=run=p1 --min-available=1
expect_ok "get pdb" k get pdb -n e2e
has "get pdb" '^pdb1 +1 +N/A +0 +'
expect_ok "create priorityclass" k create priorityclass high --value=1000
expect_ok "get priorityclass" k get pc high
has "get priorityclass" '^high +1000 +false +'
expect_ok "autoscale (autoscaling/v1)" k autoscale deployment web -n e2e --min=1 --max=4 --cpu-percent=70
expect_ok "get hpa" k get hpa web -n e2e
has "get hpa" '^web +Deployment/web +<unknown>/70% +1 +4 +'
expect_ok "hpa at v2" k get horizontalpodautoscalers.v2.autoscaling web -n e2e -o 'jsonpath={.spec.metrics[0].resource.target.averageUtilization}'
has "hpa at v2" '^70$'
expect_ok "create serviceaccount" k create serviceaccount robot -n e2e
expect_ok "create token" k create token robot -n e2e
has "create token" '^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.$'
cat >"$work/node.yaml" <<'EOF'
apiVersion: v1
kind: Node
metadata: {name: node-e2e}
EOF
cat >"$work/binding.json" <<'EOF'
{"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "p2"}, "target": {"kind": "Node", "name": "node-e2e"}}
EOF
expect_ok "create node" k apply -f "$work/node.yaml"
expect_ok "run pod p2" k run p2 -n e2e --image=nginx
expect_ok "bind p2 to the node" k create --raw /api/v1/namespaces/e2e/pods/p2/binding -f "$work/binding.json"
expect_ok "p2's node" k get pod p2 -n e2e -o 'jsonpath={.spec.nodeName}'
has "p2's node" '^node-e2e$'
expect_ok "drain the node (cordon, eviction)" k drain node-e2e --force --timeout=20s
has "drain the node (cordon, eviction)" 'pod/p2 evicted'
has "drain the node (cordon, eviction)" 'node/node-e2e drained'
expect_fail "p2 evicted" k get pod p2 -n e2e

cat >"$work/csr.yaml" <<'EOF'
apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata: {name: csr-e2e}
spec:
  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KLS0tLS1FTkQgQ0VSVElGSUNBVEUgUkVRVUVTVC0tLS0tCg==
  signerName: kubernetes.io/kube-apiserver-client
  usages: [client auth]
EOF
expect_ok "create csr" k create -f "$work/csr.yaml"
expect_ok "certificate approve" k certificate approve csr-e2e
expect_ok "get csr" k get csr csr-e2e
has "get csr" '^csr-e2e +.* +kubernetes.io/kube-apiserver-client +.* +Approved$'

# A finalizer holds one object, so the namespace stays Terminating until it is removed.
expect_ok "add a finalizer" k patch configmap cm1 -n e2e --type=merge -p '{"metadata":{"finalizers":["example.com/hold"]}}'
expect_ok "delete namespace" k delete namespace e2e --wait=false
has "delete namespace" '^namespace "e2e" deleted$'
expect_fail "create into a terminating namespace" k create configmap late -n e2e
has "create into a terminating namespace" 'forbidden: unable to create new content in namespace e2e because it is being terminated'
expect_ok "namespace is terminating" k get namespace e2e
has "namespace is terminating" '^e2e +Terminating +'
expect_ok "namespace conditions" k get namespace e2e -o 'jsonpath={.status.conditions[?(@.type=="NamespaceFinalizersRemaining")].message}'
has "namespace conditions" 'example.com/hold in 1 resource instances'
expect_ok "remove the finalizer" k patch configmap cm1 -n e2e --type=merge -p '{"metadata":{"finalizers":null}}'
expect_ok "wait for the namespace to go" k wait --for=delete namespace/e2e --timeout=20s
expect_fail "namespace gone" k get namespace e2e
has "namespace gone" 'namespaces "e2e" not found'
expect_fail "delete default" k delete namespace default
has "delete default" 'namespaces "default" is forbidden: this namespace may not be deleted'
expect_fail "create into a missing namespace" k create configmap x -n nope
has "create into a missing namespace" 'namespaces "nope" not found'

echo "kubectl-e2e: all kubectl checks passed"
