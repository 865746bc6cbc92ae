// Package controller holds the fixture's RBAC and webhook markers, where a kubebuilder
// project keeps them: above its reconcilers. tests/controller-gen/rust/controller.rs
// has the same markers; hack/controller-gen-compare.sh requires the same manifests.
package controller

// +kubebuilder:rbac:groups=fixtures.example.com,resources=widgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=fixtures.example.com,resources=widgets/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=fixtures.example.com,resources=widgets/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=core,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups="",resources=configmaps;secrets,verbs=get;list;watch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=*
// +kubebuilder:rbac:groups=core,resources=configmaps,resourceNames=widget-config,verbs=get;update
// +kubebuilder:rbac:urls=/metrics,verbs=get
// +kubebuilder:rbac:urls=/healthz;/readyz,verbs=get
// +kubebuilder:rbac:groups=core,resources=pods,verbs=get;list,namespace=fixtures-system
// +kubebuilder:rbac:groups=core,resources=serviceaccounts,verbs=get,roleName=token-reader

// +kubebuilder:webhook:path=/mutate-fixtures-example-com-v1-widget,mutating=true,failurePolicy=fail,sideEffects=None,groups=fixtures.example.com,resources=widgets,verbs=create;update,versions=v1,name=mwidget.kb.io,admissionReviewVersions=v1,reinvocationPolicy=IfNeeded
// +kubebuilder:webhook:path=/validate-fixtures-example-com-v1-widget,mutating=false,failurePolicy=fail,sideEffects=None,groups=fixtures.example.com,resources=widgets,verbs=create;update;delete,versions=v1,name=vwidget.kb.io,admissionReviewVersions=v1;v1beta1,timeoutSeconds=5,matchPolicy=Equivalent
// +kubebuilder:webhook:path=/validate-apps-v1-deployment,mutating=false,failurePolicy=ignore,sideEffects=NoneOnDryRun,groups=apps,resources=deployments,verbs=create,versions=v1,name=vdeployment.kb.io,admissionReviewVersions=v1,serviceName=fixtures-webhooks,serviceNamespace=fixtures-system,servicePort=8443
// +kubebuilder:webhook:url="https://hooks.example.com/validate-pod",mutating=false,failurePolicy=fail,sideEffects=None,groups=core,resources=pods,verbs=create,versions=v1,name=vpod.kb.io,admissionReviewVersions=v1

// Reconcile is where a kubebuilder project's markers stand.
func Reconcile() {}
