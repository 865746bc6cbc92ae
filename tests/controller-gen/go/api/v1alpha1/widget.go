package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Widget is the alpha version of the fixture kind, no longer served.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wd;wdg,categories=all;fixtures,path=widgets,singular=widget
// +kubebuilder:unservedversion
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The desired state.
	Spec WidgetSpec `json:"spec,omitempty"`
}

// WidgetSpec is the desired state of an alpha Widget.
type WidgetSpec struct {
	// How many replicas to run.
	// +optional
	Size int32 `json:"size,omitempty"`
}
