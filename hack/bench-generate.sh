#!/usr/bin/env bash
# Usage: hack/bench-generate.sh [KINDS]     (KINDS defaults to 50)
#
# Times `kubegen generate` (release build) on a generated input of KINDS kinds in one
# group, each kind with a spec of nested structs, lists, maps, enums and a status, and
# prints wall time and peak memory (GNU time's maximum resident set size) per input:
#   - crd:  KINDS CustomResourceDefinitions (one file each);
#   - rust: the same API as Rust types with +genclient markers (one file per kind), when
#           the generator has the Rust reader (`--types-path`).
# Each input runs ROUNDS times (default 5); the table shows the median wall time and the
# largest peak RSS. Inputs and outputs stay in target/bench-generate.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
KINDS=${1:-50}
ROUNDS=${ROUNDS:-5}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
OUT=$TARGET/bench-generate
command -v /usr/bin/time >/dev/null || { echo "GNU time (/usr/bin/time) is required: apt-get install time" >&2; exit 1; }
(cd "$ROOT" && cargo build --release --locked -q -p kubegen)
KUBEGEN=$TARGET/release/kubegen
rm -rf "$OUT"; mkdir -p "$OUT/crd" "$OUT/rust/bench/v1"

for ((i = 0; i < KINDS; i++)); do
  cat >"$OUT/crd/kind$i.yaml" <<YAML
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widget${i}s.bench.example.com}
spec:
  group: bench.example.com
  scope: Namespaced
  names: {kind: Widget$i, plural: widget${i}s, singular: widget$i, listKind: Widget${i}List}
  versions:
  - name: v1
    served: true
    storage: true
    subresources: {status: {}}
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            required: [name]
            properties:
              name: {type: string, maxLength: 63}
              replicas: {type: integer, format: int32, minimum: 0, default: 1}
              mode: {type: string, enum: [Fast, Safe, Off]}
              labels: {type: object, additionalProperties: {type: string}}
              ports:
                type: array
                items:
                  type: object
                  properties:
                    name: {type: string}
                    port: {type: integer, format: int32}
                    protocol: {type: string, enum: [TCP, UDP]}
              template:
                type: object
                properties:
                  image: {type: string}
                  args: {type: array, items: {type: string}}
                  resources:
                    type: object
                    properties:
                      cpu: {x-kubernetes-int-or-string: true}
                      memory: {x-kubernetes-int-or-string: true}
          status:
            type: object
            properties:
              observedGeneration: {type: integer, format: int64}
              readyReplicas: {type: integer, format: int32}
YAML
  cat >"$OUT/rust/bench/v1/kind$i.rs" <<RUST
//! Widget$i.

/// Widget$i is a benchmark kind.
/// +genclient
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Widget$i {
    pub metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
    pub spec: Widget${i}Spec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<Widget${i}Status>,
}

/// The spec.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Widget${i}Spec {
    pub name: String,
    pub replicas: Option<i32>,
    pub labels: std::collections::BTreeMap<String, String>,
    pub ports: Vec<Widget${i}Port>,
}

/// A port.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Widget${i}Port {
    pub name: String,
    pub port: i32,
}

/// The status.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Widget${i}Status {
    pub observed_generation: Option<i64>,
    pub ready_replicas: Option<i32>,
}
RUST
done
printf '//! The bench group.\npub mod v1;\n' >"$OUT/rust/bench/mod.rs"
{ echo '//! v1.'; echo '//!'; echo '//! +groupName=bench.example.com'; for ((i = 0; i < KINDS; i++)); do echo "pub mod kind$i;"; done; } >"$OUT/rust/bench/v1/mod.rs"

median() { printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
measure() { # name, then the kubegen arguments
  local name=$1; shift
  local walls=() peak=0 line wall rss
  for ((r = 0; r < ROUNDS; r++)); do
    rm -rf "$OUT/out-$name"
    line=$(/usr/bin/time -f '%e %M' "$KUBEGEN" generate "$@" -o "$OUT/out-$name" 2>&1 >/dev/null | tail -1)
    [ -d "$OUT/out-$name" ] || { echo "kubegen generate $* failed:" >&2; "$KUBEGEN" generate "$@" -o "$OUT/out-$name" >&2; exit 1; }
    wall=${line% *}; rss=${line##* }
    walls+=("$wall"); ((rss > peak)) && peak=$rss
  done
  printf '| %s | %d | %d | %s | %d |\n' "$name" "$KINDS" "$(find "$OUT/out-$name" -name '*.rs' | wc -l)" "$(median "${walls[@]}")" "$((peak / 1024))"
}
printf '\nkubegen generate, %d kinds, median of %d rounds\n\n' "$KINDS" "$ROUNDS"
printf '| input | kinds | files written | wall (s) | peak RSS (MiB) |\n|---|---|---|---|---|\n'
measure crd -f "$OUT/crd"
if "$KUBEGEN" generate --help 2>/dev/null | grep -q -- '--types-path'; then
  measure rust -f "$OUT/rust" --types-path crate::apis
else
  echo "(rust: this kubegen has no Rust reader yet)"
fi
