package v1beta1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Widget is the deprecated beta version of the fixture kind.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wd;wdg,categories=all;fixtures,path=widgets,singular=widget
// +kubebuilder:subresource:status
// +kubebuilder:deprecatedversion:warning="fixtures.kubegen.example.com/v1beta1 Widget is deprecated; use v1"
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The desired state.
	Spec WidgetSpec `json:"spec"`
	// The observed state.
	// +optional
	Status *WidgetStatus `json:"status,omitempty"`
}

// WidgetSpec is the desired state of a beta Widget.
type WidgetSpec struct {
	// How many replicas to run.
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// A DNS label.
	Label string `json:"label"`
}

// WidgetStatus is the observed state of a beta Widget.
type WidgetStatus struct {
	// How many replicas run.
	Replicas int32 `json:"replicas"`
}
