#!/usr/bin/env bash
# Usage: hack/bench-compile.sh [CRD]   (default: cert-manager's Certificate from ../shared/crds)
#
# The compile time a user feels: the same small controller (an informer over the CRD's
# kind, a work queue, a reconcile that writes status) built two ways, in one run on this
# machine:
#   (a) kubegen: the tree `kubegen generate` writes from CRD, kubegen-runtime's informer,
#       lister and RateLimitingQueue;
#   (b) kopium types (from crates.io, installed into target/tools if missing) +
#       kube-runtime's Controller.
# For each crate it builds the dependencies first (not timed), then times:
#   - clean: the controller crate alone from scratch (`cargo clean -p`, then build);
#   - touch: a rebuild after touching main.rs (ROUNDS times, default 3; median).
# Debug profile, the workspace's Cargo.lock versions. Results: a table and the ratios.
#
# Usage: hack/bench-compile.sh --builtin
#   The same for a built-in kind: a crate that lists and watches every Pod into a cache,
#   (a) kubegen-runtime's `InformerFactory::informer::<Pod>()` (protobuf negotiated, as
#   for every built-in kind), (b) kube-runtime's `reflector` over `watcher(Api<Pod>)`,
#   (c) kubegen-kubernetes' typed factory, `core().v1().pods().informer()`, which caches
#   the compact mirror of Pod by default.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
ROUNDS=${ROUNDS:-3}
OUT=$ROOT/target/bench-compile
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
now() { date +%s.%N; }
time_crate() { # dir, crate name -> "clean touch"
  local dir=$1 name=$2 t clean touches=()
  (cd "$dir" && cargo build -q 2>"$dir/build.log") || { echo "build of $dir failed; see $dir/build.log" >&2; exit 1; }
  (cd "$dir" && cargo clean -q -p "$name")
  t=$(now); (cd "$dir" && cargo build -q 2>>"$dir/build.log"); clean=$(echo "$(now) - $t" | bc)
  for ((r = 0; r < ROUNDS; r++)); do
    touch "$dir/src/main.rs"
    t=$(now); (cd "$dir" && cargo build -q 2>>"$dir/build.log"); touches+=("$(echo "$(now) - $t" | bc)")
  done
  echo "$clean $(median "${touches[@]}")"
}
# manifest DIR NAME DEPENDENCY-LINES: the crate's Cargo.toml (its own workspace, the
# same debug profile for every crate timed).
manifest() {
  cat >"$1/Cargo.toml" <<TOML
[package]
name = "$2"
version = "0.0.0"
edition = "2021"
publish = false
[workspace]
[dependencies]
$3
[profile.dev]
debug = "line-tables-only"
[profile.dev.package."*"]
debug = false
TOML
}

if [ "${1:-}" = --builtin ]; then
  mkdir -p "$OUT/builtin-kubegen/src" "$OUT/builtin-kube/src" "$OUT/builtin-typed/src"
  for d in builtin-kubegen builtin-kube builtin-typed; do cp "$ROOT/Cargo.lock" "$OUT/$d/Cargo.lock"; done
  manifest "$OUT/builtin-kubegen" bench-builtin-kubegen "kubegen-runtime = { path = \"$ROOT/runtime\" }
k8s-openapi = { version = \"0.29\", features = [\"latest\"] }
tokio = { version = \"1\", features = [\"rt-multi-thread\", \"macros\"] }"
  cat >"$OUT/builtin-kubegen/src/main.rs" <<'RUST'
use std::time::Duration;
use k8s_openapi::api::core::v1::Pod;
use kubegen_runtime::cache::factory::{FactoryOptions, InformerFactory};
use kubegen_runtime::tokio_util::sync::CancellationToken;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = kubegen_runtime::kube::Client::try_default().await?;
    let factory = InformerFactory::new(client, FactoryOptions::new(Duration::from_secs(600)));
    let pods = factory.informer::<Pod>();
    let stop = CancellationToken::new();
    factory.start(&stop);
    factory.wait_for_cache_sync(&stop).await;
    println!("{} pods", pods.indexer().len());
    Ok(())
}
RUST
  # (c) what a newcomer writes: kubegen-kubernetes' typed factory, whose Pod informer
  # caches the compact mirror by default.
  manifest "$OUT/builtin-typed" bench-builtin-typed "kubegen-runtime = { path = \"$ROOT/runtime\" }
kubegen-kubernetes = { path = \"$ROOT/kubernetes\" }
k8s-openapi = { version = \"0.29\", features = [\"latest\"] }
tokio = { version = \"1\", features = [\"rt-multi-thread\", \"macros\"] }"
  cat >"$OUT/builtin-typed/src/main.rs" <<'RUST'
use std::time::Duration;
use kubegen_kubernetes::clientset::Clientset;
use kubegen_kubernetes::informers::SharedInformerFactory;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = kubegen_runtime::kube::Client::try_default().await?;
    let factory = SharedInformerFactory::new(Clientset::new(client), Duration::from_secs(600));
    let pods = factory.core().v1().pods().informer();
    factory.start();
    factory.wait_for_cache_sync().await;
    println!("{} pods", pods.indexer().len());
    Ok(())
}
RUST
  manifest "$OUT/builtin-kube" bench-builtin-kube "kube = { version = \"5\", default-features = false, features = [\"client\", \"rustls-tls\", \"ring\", \"runtime\"] }
k8s-openapi = { version = \"0.29\", features = [\"latest\"] }
tokio = { version = \"1\", features = [\"rt-multi-thread\", \"macros\"] }
futures = \"0.3\""
  cat >"$OUT/builtin-kube/src/main.rs" <<'RUST'
use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Api, Client};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = Client::try_default().await?;
    let api: Api<Pod> = Api::all(client);
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api, watcher::Config::default())).applied_objects();
    tokio::spawn(stream.for_each(|_| async {}));
    reader.wait_until_ready().await?;
    println!("{} pods", reader.state().len());
    Ok(())
}
RUST
  read -r a_clean a_touch < <(time_crate "$OUT/builtin-kubegen" bench-builtin-kubegen)
  read -r b_clean b_touch < <(time_crate "$OUT/builtin-kube" bench-builtin-kube)
  read -r c_clean c_touch < <(time_crate "$OUT/builtin-typed" bench-builtin-typed)
  printf '\na cache of every Pod, debug build, touch = median of %d\n\n' "$ROUNDS"
  printf '| crate | crate alone, clean (s) | rebuild after touching main.rs (s) |\n|---|---|---|\n'
  printf '| (a) kubegen-runtime InformerFactory::informer::<Pod> | %.2f | %.2f |\n' "$a_clean" "$a_touch"
  printf '| (b) kube-runtime reflector over watcher(Api<Pod>) | %.2f | %.2f |\n' "$b_clean" "$b_touch"
  printf '| (c) kubegen-kubernetes core().v1().pods().informer() (compact Pod) | %.2f | %.2f |\n' "$c_clean" "$c_touch"
  printf '\nratios (a)/(b): clean %.2f, touch %.2f\n' "$(echo "$a_clean / $b_clean" | bc -l)" "$(echo "$a_touch / $b_touch" | bc -l)"
  printf 'ratios (c)/(b): clean %.2f, touch %.2f\n' "$(echo "$c_clean / $b_clean" | bc -l)" "$(echo "$c_touch / $b_touch" | bc -l)"
  exit 0
fi
case "${1:-}" in
  -*) echo "hack/bench-compile.sh: unknown option $1; usage: hack/bench-compile.sh [CRD.yaml] or hack/bench-compile.sh --builtin" >&2; exit 2 ;;
esac
if [ -n "${1:-}" ] && [ ! -f "$1" ]; then
  echo "hack/bench-compile.sh: no CRD file at $1; pass the path of a CRD YAML, or nothing for cert-manager's Certificate" >&2
  exit 2
fi
CRD=$(cd "$(dirname "${1:-$ROOT/../shared/crds/cert-manager__certificates.cert-manager.io.yaml}")" && pwd)/$(basename "${1:-cert-manager__certificates.cert-manager.io.yaml}")
TOOLS=$ROOT/target/tools
KIND=$(awk '/^  names:/{n=1; next} n&&/^    kind:/{print $2; exit}' "$CRD")
PLURAL=$(awk '/^  names:/{n=1; next} n&&/^    plural:/{print $2; exit}' "$CRD")
VERSION=$(awk '/^  versions:/{n=1; next} n&&/^  - name:/{print $3; exit} n&&/^    name:/{print $2; exit}' "$CRD")
[ -n "$KIND" ] && [ -n "$PLURAL" ] && [ -n "$VERSION" ] || { echo "hack/bench-compile.sh: $CRD has no spec.names.kind, spec.names.plural or spec.versions[0].name; pass a CustomResourceDefinition" >&2; exit 1; }

if [ ! -x "$TOOLS/bin/kopium" ]; then
  echo "installing kopium into $TOOLS (several minutes)" >&2
  cargo install kopium --root "$TOOLS"
fi
(cd "$ROOT" && cargo build --release --locked -q -p kubegen)
# Sources are written anew; each crate's target/ is kept, so a rerun rebuilds only them.
rm -rf "$OUT/kubegen/src" "$OUT/kube/src"; mkdir -p "$OUT/kubegen/src" "$OUT/kube/src"
cp "$ROOT/Cargo.lock" "$OUT/kubegen/Cargo.lock"; cp "$ROOT/Cargo.lock" "$OUT/kube/Cargo.lock"

# (a) kubegen
"$ROOT/target/release/kubegen" generate -f "$CRD" -o "$OUT/kubegen/src/generated" 2>/dev/null
GROUP_MOD=$(ls "$OUT/kubegen/src/generated/apis" | grep -v mod.rs | head -1)
VMOD=$(ls "$OUT/kubegen/src/generated/apis/$GROUP_MOD" | grep -v mod.rs | head -1)
ACCESSOR=$(grep -rhoE "pub fn [a-z_0-9]+\(&self(, namespace: &str)?\) -> ${KIND}Client" "$OUT/kubegen/src/generated/clientset" \
  | head -1 | sed -E 's/pub fn ([a-z_0-9]+).*/\1/')
manifest "$OUT/kubegen" bench-kubegen-controller "kubegen-runtime = { path = \"$ROOT/runtime\" }
k8s-openapi = { version = \"0.29\", features = [\"latest\"] }
tokio = { version = \"1\", features = [\"rt-multi-thread\", \"macros\"] }"
cat >"$OUT/kubegen/src/main.rs" <<RUST
mod generated;
use std::{sync::Arc, time::Duration};
use generated::apis::$GROUP_MOD::$VMOD::$KIND;
use generated::clientset::Clientset;
use generated::informers::SharedInformerFactory;
use kubegen_runtime::cache::informer::ResourceEventHandlerFuncs;
use kubegen_runtime::client::WriteOptions;
use kubegen_runtime::object::{object_key, split_meta_namespace_key};
use kubegen_runtime::workqueue::RateLimitingQueue;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let cs = Clientset::new(kubegen_runtime::kube::Client::try_default().await?);
    let factory = SharedInformerFactory::new(cs.clone(), Duration::from_secs(30));
    let queue = RateLimitingQueue::new();
    let informer = factory.$GROUP_MOD().$VMOD().$ACCESSOR();
    let q = queue.clone();
    informer.informer().add_event_handler(
        ResourceEventHandlerFuncs::new().add_func(move |obj: &Arc<$KIND>, _| q.add(object_key(obj.as_ref()))),
    )?;
    factory.start();
    factory.wait_for_cache_sync().await;
    let lister = informer.lister();
    while let Some(key) = queue.get().await {
        let (ns, name) = split_meta_namespace_key(&key)?;
        if let Ok(obj) = lister.$ACCESSOR(ns).get(name) {
            let updated = $KIND::clone(&obj);
            cs.${GROUP_MOD}_$VMOD().$ACCESSOR(ns).update_status(&updated, &WriteOptions::default()).await?;
        }
        queue.forget(&key);
        queue.done(&key);
    }
    Ok(())
}
RUST

# (b) kopium + kube-runtime
"$TOOLS/bin/kopium" -f "$CRD" --api-version "$VERSION" >"$OUT/kube/src/types.rs"
manifest "$OUT/kube" bench-kube-controller "kube = { version = \"5\", default-features = false, features = [\"client\", \"rustls-tls\", \"ring\", \"runtime\", \"derive\"] }
k8s-openapi = { version = \"0.29\", features = [\"latest\"] }
schemars = \"1\"
serde = { version = \"1\", features = [\"derive\"] }
serde_json = \"1\"
tokio = { version = \"1\", features = [\"rt-multi-thread\", \"macros\"] }
futures = \"0.3\""
cat >"$OUT/kube/src/main.rs" <<RUST
#[allow(dead_code, clippy::all)]
mod types;
use std::{sync::Arc, time::Duration};
use futures::StreamExt;
use kube::runtime::controller::{Action, Controller};
use kube::{api::{Api, PostParams}, Client};
use types::$KIND;

async fn reconcile(obj: Arc<$KIND>, client: Arc<Client>) -> Result<Action, kube::Error> {
    let api: Api<$KIND> = Api::namespaced((*client).clone(), obj.metadata.namespace.as_deref().unwrap_or("default"));
    let name = obj.metadata.name.clone().unwrap_or_default();
    api.replace_status(&name, &PostParams::default(), obj.as_ref()).await?;
    Ok(Action::requeue(Duration::from_secs(30)))
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let client = Client::try_default().await?;
    let api: Api<$KIND> = Api::all(client.clone());
    Controller::new(api, Default::default())
        .run(reconcile, |_, _, _| Action::requeue(Duration::from_secs(5)), Arc::new(client))
        .for_each(|_| async {})
        .await;
    Ok(())
}
RUST

read -r a_clean a_touch < <(time_crate "$OUT/kubegen" bench-kubegen-controller)
read -r b_clean b_touch < <(time_crate "$OUT/kube" bench-kube-controller)
printf '\ncontroller over %s (%s), debug build, touch = median of %d\n\n' "$KIND" "$(basename "$CRD")" "$ROUNDS"
printf '| controller | crate alone, clean (s) | rebuild after touching main.rs (s) |\n|---|---|---|\n'
printf '| (a) kubegen tree + kubegen-runtime | %.2f | %.2f |\n' "$a_clean" "$a_touch"
printf '| (b) kopium types + kube-runtime Controller | %.2f | %.2f |\n' "$b_clean" "$b_touch"
printf '\nratios (a)/(b): clean %.2f, touch %.2f\n' "$(echo "$a_clean / $b_clean" | bc -l)" "$(echo "$a_touch / $b_touch" | bc -l)"
