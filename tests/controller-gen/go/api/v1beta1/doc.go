// Package v1beta1 is an older version of the fixture API.
//
// +groupName=fixtures.kubegen.example.com
package v1beta1
