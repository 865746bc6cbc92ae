#!/usr/bin/env bash
# Regenerates apimachinery/src/protobuf/table.json (how every built-in kind travels in
# protobuf: field numbers, JSON names, Go pointer/slice/omitempty facts) and the test
# corpus apimachinery/src/protobuf/corpus.jsonl (one random object of every built-in kind
# with the JSON kube-apiserver stores for it), from the Go types of the k8s.io/api that
# tests/go-conformance/go.mod pins, by tests/go-conformance/protobufgen.
# hack/go-conformance.sh checks the table is current and decodes a fresh, larger corpus.
#
# Usage: hack/update-builtin-protobuf.sh   (needs Go; modules come from the proxy)
set -euo pipefail
cd "$(dirname "$0")/.."
go_bin=${GO:-go}
if ! command -v "$go_bin" >/dev/null 2>&1; then
  echo "update-builtin-protobuf: $go_bin not found: install Go (go.dev/dl) or set GO to its path" >&2
  exit 1
fi
version=$(cd tests/go-conformance && "$go_bin" list -m -f '{{.Path}} {{.Version}}' k8s.io/api)
(cd tests/go-conformance && PROTOBUFGEN_SOURCE="$version" "$go_bin" run ./protobufgen table) \
  > apimachinery/src/protobuf/table.json.new
mv apimachinery/src/protobuf/table.json.new apimachinery/src/protobuf/table.json
(cd tests/go-conformance && "$go_bin" run ./protobufgen corpus -seed 1) \
  > apimachinery/src/protobuf/corpus.jsonl.new
mv apimachinery/src/protobuf/corpus.jsonl.new apimachinery/src/protobuf/corpus.jsonl
echo "apimachinery/src/protobuf/{table.json,corpus.jsonl} from $version"
