// Package v1alpha1 is an older version of the fixture API.
//
// +groupName=fixtures.kubegen.example.com
package v1alpha1
