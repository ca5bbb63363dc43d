package console

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/review"
)

// A person's upstream authorizations (ADR 056): the Secrets the gateway
// keeps per person and per-person McpServer. The console shows the
// signed-in person (its kubeconfig's user) their own, from the Secrets'
// metadata only, and revokes one the way kubectl mcp revoke-authorization
// does (personauth.Revoker, with the person's credentials). Whatever else
// their RBAC lets them list, another person's authorization is neither
// shown nor revoked here: mine is the one check, applied to each.

// AuthorizationItem is one of the person's authorizations, as the page
// shows it. Every field comes from metadata: no token is read to list.
type AuthorizationItem struct {
	Namespace string `json:"namespace"`
	// Name is the Secret's: what a revoke names.
	Name   string `json:"name"`
	Server string `json:"server"`
	State  string `json:"state"`
	// Granted, Updated and Expires are RFC 3339 times; empty when not
	// recorded.
	Granted string `json:"granted,omitempty"`
	Updated string `json:"updated,omitempty"`
	Expires string `json:"expires,omitempty"`
	Scopes  string `json:"scopes,omitempty"`
}

// AuthorizationsView is the answer of GET /api/authorizations.
type AuthorizationsView struct {
	User  string              `json:"user"`
	Items []AuthorizationItem `json:"items"`
}

// mine reports whether the authorization Secret m is user's: the label,
// and the annotation naming the person (its server annotation names the
// server it is for).
func mine(m metav1.Object, user string) bool {
	return user != "" && personauth.Owns(m, m.GetAnnotations()[personauth.AnnotationServer], user)
}

func (c *Console) listAuthorizations(w http.ResponseWriter, r *http.Request) {
	user, err := review.WhoAmI(r.Context(), c.opts.Client)
	if err != nil {
		fail(w, err)
		return
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	opts := []client.ListOption{client.MatchingLabels{personauth.LabelAuthorization: "true"}}
	if c.opts.Namespace != "" {
		opts = append(opts, client.InNamespace(c.opts.Namespace))
	}
	if err := c.opts.Client.List(r.Context(), list, opts...); err != nil {
		fail(w, &review.APIError{Doing: "listing your authorizations (Secrets' metadata)", Err: err})
		return
	}
	v := AuthorizationsView{User: user, Items: []AuthorizationItem{}}
	for i := range list.Items {
		m := &list.Items[i]
		if !mine(m, user) {
			continue
		}
		a := m.Annotations
		v.Items = append(v.Items, AuthorizationItem{
			Namespace: m.Namespace, Name: m.Name, Server: review.Printable(a[personauth.AnnotationServer], false),
			State: review.Printable(a[personauth.AnnotationState], false), Granted: a[personauth.AnnotationGranted],
			Updated: a[personauth.AnnotationUpdated], Expires: a[personauth.AnnotationExpires],
			Scopes: review.Printable(a[personauth.AnnotationScopes], false),
		})
	}
	sort.Slice(v.Items, func(i, j int) bool {
		a, b := v.Items[i], v.Items[j]
		return a.Namespace+"\x00"+a.Server < b.Namespace+"\x00"+b.Server
	})
	writeJSON(w, v)
}

// revokeRequest names one authorization by its Secret.
type revokeRequest struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

func (c *Console) revokeAuthorization(w http.ResponseWriter, r *http.Request) {
	var req revokeRequest
	if !readJSON(w, r, &req) || !c.inScope(w, req.Namespace, req.Name) {
		return
	}
	user, err := review.WhoAmI(r.Context(), c.opts.Client)
	if err != nil {
		fail(w, err)
		return
	}
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if err := c.opts.Client.Get(r.Context(), types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, m); err != nil {
		if apierrors.IsNotFound(err) {
			answer(w, http.StatusNotFound, "", "no such authorization: it may have been revoked already")
			return
		}
		fail(w, &review.APIError{Doing: "reading the authorization's metadata", Err: err})
		return
	}
	// The one check that keeps a person to their own: the Secret must be
	// an authorization, and its person the signed-in one.
	if !mine(m, user) {
		answer(w, http.StatusForbidden, "", "this is not one of your authorizations: the console shows and revokes only your own")
		return
	}
	server, person := m.Annotations[personauth.AnnotationServer], m.Annotations[personauth.AnnotationUser]
	out, err := (&personauth.Revoker{Client: c.opts.Client, Egress: personauth.LocalEgress()}).Revoke(r.Context(), req.Namespace, server, person)
	if err != nil {
		var (
			notStored *personauth.NotStoredError
			notAuth   *personauth.NotAnAuthorizationError
		)
		switch {
		case errors.As(err, &notStored):
			answer(w, http.StatusNotFound, "", err.Error())
		case errors.As(err, &notAuth):
			answer(w, http.StatusConflict, "", err.Error())
		default:
			fail(w, &review.APIError{Doing: "revoking the authorization", Err: err})
		}
		return
	}
	answer(w, http.StatusOK, "authorization of McpServer "+req.Namespace+"/"+review.Printable(server, false)+" revoked; "+out.Words(), "")
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(v)
}
