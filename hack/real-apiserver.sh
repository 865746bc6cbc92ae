#!/usr/bin/env bash
# A real Kubernetes control plane (etcd + kube-apiserver + kube-controller-manager) built
# from the Go module proxy and run on loopback: the oracle that kubegen's in-memory server,
# its fakes, `kubegen crd` and the informer benchmark are held to.
#
# Usage: hack/real-apiserver.sh build|start|stop|env|status
#   build   build the three binaries once per pinned version into
#           target/real-apiserver/<k8s>-etcd<etcd>/ (a stamp names the versions; a
#           changed pin rebuilds, an unchanged one costs nothing)
#   start   build if needed, then start etcd, kube-apiserver (admin token in
#           system:masters, RBAC, self-signed serving certificate) and the controller
#           manager (garbage collector, namespace, service-account controllers) on
#           127.0.0.1; waits for /readyz and the default ServiceAccount; writes
#           $RUN_DIR/kubeconfig. Idempotent: a running control plane is left alone.
#   stop    stop what `start` started, by the PIDs it wrote (never by name)
#   env     print `export KUBECONFIG=.. KUBEGEN_ENVTEST_ASSETS=..` for eval
#   status  say whether it runs and where
#
# Environment: KUBE_VERSION (v1.36.3), ETCD_VERSION (v3.6.8), REAL_APISERVER_PORT (6555;
# etcd uses the next two ports, the controller manager the third), REAL_APISERVER_DIR
# (target/real-apiserver/run), NO_KCM=1 (no controller manager).
# Go (1.25+) and the module proxy are needed for `build` only; kubectl for the readiness
# checks. Only loopback addresses are used.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

kv=${KUBE_VERSION:-v1.36.3}
ev=${ETCD_VERSION:-v3.6.8}
port=${REAL_APISERVER_PORT:-6555}
cache=${CARGO_TARGET_DIR:-$root/target}/real-apiserver
bin=$cache/$kv-etcd$ev
run=${REAL_APISERVER_DIR:-$cache/run}
binaries=(kube-apiserver kube-controller-manager etcd)

die() { echo "real-apiserver: $*" >&2; exit 1; }

built() {
  [ -f "$bin/stamp" ] && [ "$(cat "$bin/stamp")" = "$kv $ev" ] || return 1
  for b in "${binaries[@]}"; do [ -x "$bin/$b" ] || return 1; done
}

build() {
  mkdir -p "$cache"
  # One build at a time (CI starts one in the background early; a later `build` waits
  # for it here and then finds the binaries).
  exec 9>"$cache/.build.lock"
  flock 9
  if built; then echo "real-apiserver: $kv + etcd $ev already built in $bin"; flock -u 9; return; fi
  command -v go >/dev/null || die "Go is needed to build the control plane (https://go.dev/dl, 1.25 or newer); or set KUBEGEN_ENVTEST_ASSETS to a directory holding kube-apiserver and etcd"
  local start=$SECONDS
  local minor=${kv#v1.}; minor=${minor%%.*}
  local patch=${kv##*.}
  local staging=v0.$minor.$patch
  local mod=$bin/module
  rm -rf "$bin"; mkdir -p "$mod/cmd/kube-apiserver" "$mod/cmd/kube-controller-manager" "$mod/cmd/etcd"
  cd "$mod"
  echo "real-apiserver: fetching k8s.io/kubernetes@$kv"
  go mod download -json "k8s.io/kubernetes@$kv" >/dev/null
  local upstream
  upstream=$(go env GOMODCACHE)/k8s.io/kubernetes@$kv/go.mod
  # k8s.io/kubernetes points its staging modules at ./staging/src; a module that
  # requires it must point each at the published k8s.io/<name> v0.<minor>.<patch>.
  {
    printf 'module kubegen.dev/real-apiserver\n\ngo %s\n\n' "$(awk '$1 == "go" {print $2; exit}' "$upstream")"
    printf 'require (\n\tk8s.io/kubernetes %s\n\tgo.etcd.io/etcd/server/v3 %s\n)\n\n' "$kv" "$ev"
    awk -v v="$staging" '$1 ~ /^k8s\.io\// && $2 == "=>" && $3 ~ /^\.\/staging\// {print "replace " $1 " => " $1 " " v}' "$upstream"
  } >go.mod
  main_go() { # dir, import path, call
    printf 'package main\n\nimport (\n\t"os"\n\n\t"k8s.io/component-base/cli"\n\t"%s"\n)\n\nfunc main() { os.Exit(cli.Run(%s)) }\n' "$2" "$3" >"$1/main.go"
  }
  main_go cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-apiserver/app 'app.NewAPIServerCommand()'
  main_go cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-controller-manager/app 'app.NewControllerManagerCommand()'
  printf 'package main\n\nimport (\n\t"os"\n\n\t"go.etcd.io/etcd/server/v3/etcdmain"\n)\n\nfunc main() { etcdmain.Main(os.Args) }\n' >cmd/etcd/main.go
  go mod tidy
  # Without the version stamp /version says v0.0.0-master and kubectl cannot parse it.
  local ld="-s -w -X k8s.io/component-base/version.gitVersion=$kv -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  for b in "${binaries[@]}"; do
    local t=$SECONDS
    go build -trimpath -ldflags "$ld" -o "$bin/$b" "./cmd/$b"
    echo "real-apiserver: built $b in $((SECONDS - t))s"
  done
  echo "$kv $ev" >"$bin/stamp"
  flock -u 9
  cd "$root"
  echo "real-apiserver: built $kv + etcd $ev into $bin in $((SECONDS - start))s"
}

kubeconfig() { echo "$run/kubeconfig"; }

running() {
  [ -f "$run/kube-apiserver.pid" ] && kill -0 "$(cat "$run/kube-apiserver.pid")" 2>/dev/null \
    && kubectl --kubeconfig "$(kubeconfig)" get --raw /readyz >/dev/null 2>&1
}

start() {
  if running; then echo "real-apiserver: already running (KUBECONFIG=$(kubeconfig))"; return; fi
  stop quiet
  build
  command -v openssl >/dev/null || die "openssl is needed for the service-account key pair"
  mkdir -p "$run/certs"; rm -rf "$run/etcd"
  local ec=$((port + 1)) ep=$((port + 2)) cm=$((port + 3))
  if [ ! -f "$run/certs/sa.key" ]; then
    openssl genrsa -out "$run/certs/sa.key" 2048 2>/dev/null
    openssl rsa -in "$run/certs/sa.key" -pubout -out "$run/certs/sa.pub" 2>/dev/null
  fi
  echo "admintoken,admin,admin,system:masters" >"$run/certs/tokens.csv"
  "$bin/etcd" --data-dir "$run/etcd" --listen-client-urls "http://127.0.0.1:$ec" \
    --advertise-client-urls "http://127.0.0.1:$ec" --listen-peer-urls "http://127.0.0.1:$ep" \
    --initial-advertise-peer-urls "http://127.0.0.1:$ep" --initial-cluster "default=http://127.0.0.1:$ep" \
    --quota-backend-bytes 8589934592 >"$run/etcd.log" 2>&1 &
  echo $! >"$run/etcd.pid"
  # shellcheck disable=SC2086 # KAS_ARGS is a list of flags
  "$bin/kube-apiserver" --etcd-servers "http://127.0.0.1:$ec" --bind-address 127.0.0.1 \
    --advertise-address 127.0.0.1 --secure-port "$port" --cert-dir "$run/certs" \
    --service-account-key-file "$run/certs/sa.pub" --service-account-signing-key-file "$run/certs/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --token-auth-file "$run/certs/tokens.csv" \
    --authorization-mode RBAC --service-cluster-ip-range 10.96.0.0/24 ${KAS_ARGS:-} \
    >"$run/kube-apiserver.log" 2>&1 &
  echo $! >"$run/kube-apiserver.pid"
  cat >"$run/kubeconfig" <<KC
apiVersion: v1
kind: Config
clusters: [{name: real, cluster: {server: "https://127.0.0.1:$port", insecure-skip-tls-verify: true}}]
users: [{name: admin, user: {token: admintoken}}]
contexts: [{name: real, context: {cluster: real, user: admin, namespace: default}}]
current-context: real
KC
  local t=$SECONDS
  until kubectl --kubeconfig "$run/kubeconfig" get --raw /readyz >/dev/null 2>&1; do
    kill -0 "$(cat "$run/kube-apiserver.pid")" 2>/dev/null || { tail -20 "$run/kube-apiserver.log" >&2; die "kube-apiserver exited; see $run/kube-apiserver.log"; }
    [ $((SECONDS - t)) -lt 90 ] || die "kube-apiserver not ready after 90s; see $run/kube-apiserver.log"
    sleep 0.5
  done
  if [ -z "${NO_KCM:-}" ]; then
    "$bin/kube-controller-manager" --kubeconfig "$run/kubeconfig" --authentication-kubeconfig "$run/kubeconfig" \
      --authorization-kubeconfig "$run/kubeconfig" --service-account-private-key-file "$run/certs/sa.key" \
      --root-ca-file "$run/certs/apiserver.crt" --leader-elect=false --bind-address 127.0.0.1 --secure-port "$cm" \
      --controllers serviceaccount-controller,serviceaccount-token-controller,namespace-controller,garbage-collector-controller \
      >"$run/kube-controller-manager.log" 2>&1 &
    echo $! >"$run/kube-controller-manager.pid"
    # Pods need the namespace's default ServiceAccount (the ServiceAccount admission plugin).
    until kubectl --kubeconfig "$run/kubeconfig" -n default get serviceaccount default >/dev/null 2>&1; do
      [ $((SECONDS - t)) -lt 90 ] || die "no default ServiceAccount after 90s; see $run/kube-controller-manager.log"
      sleep 0.5
    done
  fi
  echo "real-apiserver: $kv ready in $((SECONDS - t))s: KUBECONFIG=$run/kubeconfig"
}

stop() {
  local any=
  for c in kube-controller-manager kube-apiserver etcd; do
    local f=$run/$c.pid
    [ -f "$f" ] || continue
    local pid; pid=$(cat "$f")
    if kill "$pid" 2>/dev/null; then
      any=1
      for _ in $(seq 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
      kill -9 "$pid" 2>/dev/null || true
    fi
    rm -f "$f"
  done
  [ "${1:-}" = quiet ] || { [ -n "$any" ] && echo "real-apiserver: stopped" || echo "real-apiserver: was not running"; }
}

case ${1:-} in
  build) build ;;
  start) start ;;
  stop) stop ;;
  env) echo "export KUBECONFIG=$(kubeconfig) KUBEGEN_ENVTEST_ASSETS=$bin" ;;
  status) if running; then echo "running: KUBECONFIG=$(kubeconfig)"; else echo "not running"; exit 1; fi ;;
  *) sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
