# Sourced by .ci/run and the hack/ stage scripts: the cargo features every stage builds
# the workspace with, in one place, so that the stages reuse one build (a crate built with
# another feature set is compiled again). Never --all-features: k8s-openapi would get two
# Kubernetes versions.
KUBEGEN_TEST_FEATURES=${KUBEGEN_TEST_FEATURES:-kubegen-runtime/testing,kubegen-runtime/prometheus,kubegen-runtime/webhook,kubegen-kubernetes/compact}
export KUBEGEN_TEST_FEATURES
