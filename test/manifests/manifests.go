// Package manifests lets tests hand rendered YAML to a real API server the
// way `kubectl apply --server-side` would: CustomResourceDefinitions and
// Namespaces are created for real (everything else depends on them), every
// other object is applied with a server-side dry-run, so the API server runs
// defaulting, schema and CEL validation and admission and persists nothing.
package manifests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"
)

// Decode splits a multi-document YAML stream into objects, skipping empty
// documents and refusing one without apiVersion and kind.
func Decode(raw []byte) ([]*unstructured.Unstructured, error) {
	var objs []*unstructured.Unstructured
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(raw)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, err
		}
		var m map[string]any
		if err := yaml.Unmarshal(doc, &m); err != nil {
			return nil, err
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetAPIVersion() == "" || u.GetKind() == "" {
			return nil, fmt.Errorf("a document without apiVersion or kind: %s", doc)
		}
		objs = append(objs, u)
	}
}

// Kinds counts the objects of each kind.
func Kinds(objs []*unstructured.Unstructured) map[string]int {
	n := map[string]int{}
	for _, o := range objs {
		n[o.GetKind()]++
	}
	return n
}

// Apply creates the CRDs (waiting until they are served) and Namespaces
// among objs, and server-side dry-run applies the rest, in namespace ns when
// an object names none. It returns one error per refused object.
func Apply(ctx context.Context, cfg *rest.Config, c client.Client, objs []*unstructured.Unstructured, ns, fieldOwner string) []error {
	var crds []*apiextensionsv1.CustomResourceDefinition
	var rest []*unstructured.Unstructured
	var errs []error
	for _, o := range objs {
		switch o.GetKind() {
		case "CustomResourceDefinition":
			var crd apiextensionsv1.CustomResourceDefinition
			b, err := o.MarshalJSON()
			if err == nil {
				err = json.Unmarshal(b, &crd)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("CRD %s: %w", o.GetName(), err))
				continue
			}
			crds = append(crds, &crd)
		case "Namespace":
			if err := c.Create(ctx, o.DeepCopy()); err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("namespace %s: %w", o.GetName(), err))
			}
		default:
			rest = append(rest, o)
		}
	}
	if len(crds) > 0 {
		if _, err := envtest.InstallCRDs(cfg, envtest.CRDInstallOptions{CRDs: crds}); err != nil {
			return append(errs, fmt.Errorf("installing CRDs: %w", err))
		}
	}
	for _, o := range rest {
		o = o.DeepCopy()
		if o.GetNamespace() == "" && ns != "" && namespaced(o) {
			o.SetNamespace(ns)
		}
		err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o), client.DryRunAll,
			client.FieldOwner(fieldOwner), client.ForceOwnership)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s %s/%s: %w", o.GetKind(), o.GetNamespace(), o.GetName(), err))
		}
	}
	return errs
}

// namespaced reports whether an object of this kind lives in a namespace,
// for the cluster-scoped kinds manifests here contain.
func namespaced(o *unstructured.Unstructured) bool {
	switch o.GetKind() {
	case "ClusterRole", "ClusterRoleBinding", "CustomResourceDefinition", "Namespace",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding",
		"ValidatingWebhookConfiguration", "MutatingWebhookConfiguration":
		return false
	}
	return true
}
