package v1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Widget is the fixture kind with every resource marker: scope, short names,
// categories, status and scale subresources, printer columns, a selectable field,
// and the storage version of three.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wd;wdg,categories=all;fixtures,path=widgets,singular=widget
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:printcolumn:name="Replicas",type="integer",JSONPath=".spec.replicas",description="Desired replicas"
// +kubebuilder:printcolumn:name="Mode",type="string",JSONPath=".spec.mode",priority=1
// +kubebuilder:printcolumn:name="Age",type="date",JSONPath=".metadata.creationTimestamp",format="date-time"
// +kubebuilder:selectablefield:JSONPath=".spec.mode"
// +kubebuilder:storageversion
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The desired state.
	Spec WidgetSpec `json:"spec"`
	// The observed state.
	Status WidgetStatus `json:"status,omitempty"`
}

// Mode says how a widget runs.
//
// +kubebuilder:validation:Enum=Fast;Slow
type Mode string

// Mode values.
const (
	ModeFast Mode = "Fast"
	ModeSlow Mode = "Slow"
)

// WidgetSpec is the desired state of a Widget: one field per validation marker.
//
// +kubebuilder:validation:XValidation:rule="self.minReplicas <= self.maxReplicas",message="minReplicas must not exceed maxReplicas"
type WidgetSpec struct {
	// Fields shared with other kinds, inlined.
	CommonSpec `json:",inline"`

	// How many replicas to run.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// The fewest replicas.
	// +kubebuilder:default=1
	MinReplicas int32 `json:"minReplicas,omitempty"`

	// The most replicas.
	// +kubebuilder:default=10
	MaxReplicas int32 `json:"maxReplicas,omitempty"`

	// A step between two exclusive bounds, a multiple of 5.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:ExclusiveMinimum=true
	// +kubebuilder:validation:Maximum=1000
	// +kubebuilder:validation:ExclusiveMaximum=true
	// +kubebuilder:validation:MultipleOf=5
	Step int64 `json:"step"`

	// A weight.
	// +kubebuilder:validation:Minimum=0.5
	// +optional
	Weight *float64 `json:"weight,omitempty"`

	// A DNS label.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z]([-a-z0-9]*[a-z0-9])?$`
	Label string `json:"label"`

	// How the widget runs.
	// +kubebuilder:default=Fast
	Mode Mode `json:"mode,omitempty"`

	// A size class.
	// +kubebuilder:validation:Enum=small;medium;large
	// +optional
	Size string `json:"size,omitempty"`

	// The owner's e-mail address.
	// +kubebuilder:validation:Format=email
	// +optional
	Owner string `json:"owner,omitempty"`

	// Tags, each at most 16 characters, no repeats.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=10
	// +kubebuilder:validation:items:MaxLength=16
	// +kubebuilder:validation:items:Pattern=`^[a-z]+$`
	// +listType=set
	// +optional
	Tags []string `json:"tags,omitempty"`

	// Labels to copy, at least one and at most five.
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=5
	// +mapType=granular
	// +optional
	Labels map[string]string `json:"labels,omitempty"`

	// Limits by resource name.
	// +optional
	Limits map[string]int64 `json:"limits,omitempty"`

	// Ports by name and protocol.
	// +listType=map
	// +listMapKey=name
	// +listMapKey=protocol
	// +optional
	Ports []Port `json:"ports,omitempty"`

	// Named backends.
	// +optional
	Backends map[string]Backend `json:"backends,omitempty"`

	// Required although omitempty.
	// +kubebuilder:validation:Required
	Region string `json:"region,omitempty"`

	// Optional although not omitempty (kubebuilder's marker).
	// +kubebuilder:validation:Optional
	Zone string `json:"zone"`

	// Optional although not omitempty (Kubernetes' marker).
	// +optional
	Rack string `json:"rack"`

	// A pause that may be null.
	// +nullable
	// +optional
	PausedAt *metav1.Time `json:"pausedAt,omitempty"`

	// A count that travels as a string.
	// +kubebuilder:validation:Type=string
	// +optional
	Count string `json:"count,omitempty"`

	// The surge, renamed on the wire.
	// +optional
	MaxSurge *intstr.IntOrString `json:"surge,omitempty"`

	// Memory to reserve.
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`

	// A deadline.
	// +optional
	Deadline metav1.Time `json:"deadline,omitempty"`

	// Any JSON, kept as written.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Config *apiextensionsv1.JSON `json:"config,omitempty"`

	// Any JSON value (apiextensions JSON).
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// An embedded Kubernetes object.
	// +kubebuilder:validation:XEmbeddedResource
	// +optional
	Template runtime.RawExtension `json:"template,omitempty"`

	// An integer or a string, without a Go type that says so.
	// +kubebuilder:validation:Schemaless
	// +kubebuilder:validation:XIntOrString
	// +optional
	Threshold *apiextensionsv1.JSON `json:"threshold,omitempty"`

	// Settings whose unknown fields are kept.
	// +kubebuilder:validation:XPreserveUnknownFields
	// +optional
	Extra *Extra `json:"extra,omitempty"`

	// The update strategy.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="strategy is immutable",reason="FieldValueForbidden",fieldPath=".type"
	// +kubebuilder:validation:XValidation:rule="!oldSelf.hasValue() || !has(self.maxUnavailable) || self.type == 'Rolling'",messageExpression="'maxUnavailable needs Rolling, not ' + self.type",optionalOldSelf=true
	// +optional
	Strategy *Strategy `json:"strategy,omitempty"`

	// Where it runs, set as a whole.
	// +optional
	Placement *Placement `json:"placement,omitempty"`

	// Defaults of each kind.
	// +optional
	Defaults Defaults `json:"defaults,omitempty"`
}

// CommonSpec holds fields several kinds share.
type CommonSpec struct {
	// A display name.
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// The priority.
	Priority int32 `json:"priority"`
}

// Port is one port of a widget.
type Port struct {
	// The port's name.
	Name string `json:"name"`
	// Its protocol.
	// +kubebuilder:default=TCP
	Protocol string `json:"protocol,omitempty"`
	// Its number.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`
}

// Backend is one named backend.
type Backend struct {
	// The backend's address.
	Address string `json:"address"`
	// Its weight.
	// +optional
	Weight *int32 `json:"weight,omitempty"`
}

// Extra holds settings of plugins.
type Extra struct {
	// The plugin's name.
	// +optional
	Plugin string `json:"plugin,omitempty"`
}

// Strategy says how a widget is updated.
type Strategy struct {
	// The strategy's type.
	// +kubebuilder:validation:Enum=Recreate;Rolling
	Type string `json:"type"`
	// How many may be unavailable during an update.
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
}

// Placement is replaced as a whole on update.
//
// +structType=atomic
type Placement struct {
	// The node's name.
	// +optional
	Node string `json:"node,omitempty"`
	// Node labels to match.
	// +optional
	// +mapType=atomic
	Selector map[string]string `json:"selector,omitempty"`
}

// Defaults has one default of each JSON kind.
type Defaults struct {
	// A string default.
	// +kubebuilder:default="hello"
	// +optional
	Greeting string `json:"greeting,omitempty"`
	// A boolean default.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
	// A list default.
	// +kubebuilder:default={"a","b"}
	// +optional
	Letters []string `json:"letters,omitempty"`
	// An object default.
	// +kubebuilder:default={"node":"n1"}
	// +optional
	Where *Placement `json:"where,omitempty"`
	// A number default.
	// +kubebuilder:default=0.25
	// +optional
	Fraction *float64 `json:"fraction,omitempty"`
}

// WidgetStatus is the observed state of a Widget.
type WidgetStatus struct {
	// How many replicas run.
	Replicas int32 `json:"replicas"`
	// The label selector of the replicas, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`
	// The generation last observed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// The latest observations of the widget's state.
	// +listType=map
	// +listMapKey=type
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`
	// When it last changed.
	// +optional
	LastUpdated *metav1.Time `json:"lastUpdated,omitempty"`
}

// Gadget is a cluster-scoped kind with a resource path and singular of its own.
//
// +genclient
// +genclient:nonNamespaced
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,path=gadgetries,singular=gadgetry
type Gadget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The gadget's settings.
	// +optional
	Spec GadgetSpec `json:"spec,omitempty"`
}

// GadgetSpec is the gadget's settings.
type GadgetSpec struct {
	// A colour.
	// +optional
	Colour string `json:"colour,omitempty"`
	// Parts by name, each a list of sizes.
	// +optional
	Parts map[string][]int32 `json:"parts,omitempty"`
	// Matrix of values.
	// +optional
	Matrix [][]int64 `json:"matrix,omitempty"`
	// Sizes, each between 1 and 9.
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=9
	// +kubebuilder:default={}
	// +optional
	Sizes []int32 `json:"sizes,omitempty"`
	// Colours from a fixed set, each checked by a rule.
	// +kubebuilder:validation:items:Enum=red;green;blue
	// +kubebuilder:validation:items:XValidation:rule="self != 'blue' || true",message="blue is fine"
	// +optional
	Palette []string `json:"palette,omitempty"`
	// Phases, in order.
	// +optional
	Phases []Phase `json:"phases,omitempty"`
	// Widths by name, each a whole number of units.
	// +optional
	Widths map[string]Width `json:"widths,omitempty"`
	// A small number.
	// +optional
	Tiny int8 `json:"tiny,omitempty"`
	// A medium number.
	// +optional
	Medium uint16 `json:"medium,omitempty"`
	// An unsigned 32-bit number.
	// +optional
	Unsigned uint32 `json:"unsigned,omitempty"`
	// An unsigned 64-bit number.
	// +optional
	Huge uint64 `json:"huge,omitempty"`
	// A number of the platform's width.
	// +optional
	Native int `json:"native,omitempty"`
	// Bytes, base64 on the wire.
	// +optional
	Data []byte `json:"data,omitempty"`
	// A ratio, never null.
	Ratio float64 `json:"ratio"`
	// When it was last seen, to the microsecond.
	// +optional
	SeenAt *metav1.MicroTime `json:"seenAt,omitempty"`
}

// Phase is a step of a gadget's life.
//
// +kubebuilder:validation:Enum=pending;running;done
type Phase string

// Width is a whole number of units.
//
// +kubebuilder:validation:Minimum=0
// +kubebuilder:validation:MultipleOf=10
type Width int64
