// Package v1alpha1 contains the API types of the mcp.catalog.dev group:
// McpServer, McpTool and McpDelegationProfile.
//
// The package holds types, markers and constants only; behaviour lives in
// internal/.
//
// +kubebuilder:object:generate=true
// +kubebuilder:ac:generate=true
// +kubebuilder:ac:output:package=../applyconfiguration
// +groupName=mcp.catalog.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "mcp.catalog.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the kinds of this package with a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion} //nolint:staticcheck // the kubebuilder layout; replacing it is part of moving the scheme next to the API

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// SchemeGroupVersion is GroupVersion under the name generated code expects.
var SchemeGroupVersion = GroupVersion
