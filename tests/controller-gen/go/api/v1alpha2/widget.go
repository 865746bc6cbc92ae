package v1alpha2

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Widget is a version that the CRD leaves out.
//
// +genclient
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Namespaced,shortName=wd;wdg,categories=all;fixtures,path=widgets,singular=widget
// +kubebuilder:skipversion
type Widget struct {
	metav1.TypeMeta `json:",inline"`
	// Standard object metadata.
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// The desired state.
	Spec WidgetSpec `json:"spec,omitempty"`
}

// WidgetSpec is the desired state of a skipped Widget.
type WidgetSpec struct {
	// Anything.
	// +optional
	Note string `json:"note,omitempty"`
}
