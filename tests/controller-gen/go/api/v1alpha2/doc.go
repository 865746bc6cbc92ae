// Package v1alpha2 is an older version of the fixture API.
//
// +groupName=fixtures.kubegen.example.com
package v1alpha2
