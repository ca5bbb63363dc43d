package personauth

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// Labels and annotations of a person's authorization Secret. The labels
// are an index (kubectl mcp lists by them); the annotations say whose it
// is, in words; the gateway checks the annotation, not only the name.
const (
	// LabelAuthorization marks a Secret as a person's authorization of an
	// McpServer.
	LabelAuthorization = "mcp.catalog.dev/person-authorization"
	// LabelServerHash and LabelUserHash are hashes of the server's and
	// the person's names (label values cannot hold every name).
	LabelServerHash = "mcp.catalog.dev/server-hash"
	LabelUserHash   = "mcp.catalog.dev/user-hash"
	// AnnotationServer and AnnotationUser name the server and person.
	AnnotationServer = "mcp.catalog.dev/server"
	AnnotationUser   = "mcp.catalog.dev/user"
	// AnnotationState is Authorized, Refused (the person refused consent
	// at the authorization server) or Revoked (the refresh token was
	// refused); only Authorized holds tokens.
	AnnotationState = "mcp.catalog.dev/authorization-state"
	// AnnotationUpdated is when the state was last written (RFC 3339).
	AnnotationUpdated = "mcp.catalog.dev/authorization-updated"
	// AnnotationGranted is when the person consented (RFC 3339), kept
	// through refreshes; AnnotationScopes the scopes granted, as the token
	// response said (or as asked, when it said none); AnnotationExpires
	// when the access token expires (RFC 3339; absent: not said). They are
	// what a person is shown of an authorization without its tokens.
	AnnotationGranted = "mcp.catalog.dev/authorization-granted"
	AnnotationScopes  = "mcp.catalog.dev/authorization-scopes"
	AnnotationExpires = "mcp.catalog.dev/access-token-expires"
)

// The states of a person's authorization.
const (
	StateAuthorized = "Authorized"
	StateRefused    = "Refused"
	StateRevoked    = "Revoked"
)

// Keys of the Secret's data.
const (
	keyAccessToken  = "access-token"
	keyRefreshToken = "refresh-token"
	keyTokenType    = "token-type"
	keyExpiry       = "expiry"
	keyIssuer       = "issuer"
	keyClientID     = "client-id"
)

// SecretPrefix begins the name of every authorization Secret.
const SecretPrefix = "mcp-person-auth-"

func hash(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:40]
}

// SecretName is the name of the Secret holding user's authorization of
// the McpServer server, in the server's namespace.
func SecretName(server, user string) string { return SecretPrefix + hash(server, user) }

// UserHash is the value of LabelUserHash for user.
func UserHash(user string) string { return hash(user) }

// ServerHash is the value of LabelServerHash for server.
func ServerHash(server string) string { return hash(server) }

// stored is what a Secret says of one person's authorization.
type stored struct {
	state                      string
	access, refresh, tokenType string
	expiry                     time.Time
	issuer, clientID           string
	updated, granted           time.Time
	scopes                     string
}

// read returns the authorization user holds for srv, nil when there is
// none (or the Secret is not the gateway's for this server and person).
func (a *Authorizer) read(ctx context.Context, srv *mcpv1alpha1.McpServer, user string) (*stored, *corev1.Secret, error) {
	var s corev1.Secret
	err := a.Client.Get(ctx, types.NamespacedName{Namespace: srv.Namespace, Name: SecretName(srv.Name, user)}, &s)
	if apierrors.IsNotFound(err) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("reading the authorization Secret: %w", err)
	}
	if s.Labels[LabelAuthorization] != "true" || s.Annotations[AnnotationUser] != user || s.Annotations[AnnotationServer] != srv.Name {
		return nil, &s, nil
	}
	st := &stored{
		state:     s.Annotations[AnnotationState],
		access:    string(s.Data[keyAccessToken]),
		refresh:   string(s.Data[keyRefreshToken]),
		tokenType: string(s.Data[keyTokenType]),
		issuer:    string(s.Data[keyIssuer]),
		clientID:  string(s.Data[keyClientID]),
	}
	st.expiry, _ = time.Parse(time.RFC3339, string(s.Data[keyExpiry]))
	st.updated, _ = time.Parse(time.RFC3339, s.Annotations[AnnotationUpdated])
	st.granted, _ = time.Parse(time.RFC3339, s.Annotations[AnnotationGranted])
	st.scopes = s.Annotations[AnnotationScopes]
	return st, &s, nil
}

// write creates or replaces user's authorization Secret for srv with st.
// prev is the Secret as last read (nil: none), whose resourceVersion the
// update carries, so that of two replicas refreshing at once one wins.
func (a *Authorizer) write(ctx context.Context, srv *mcpv1alpha1.McpServer, user string, st stored, prev *corev1.Secret) error {
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: srv.Namespace,
			Name:      SecretName(srv.Name, user),
			Labels: map[string]string{
				LabelAuthorization: "true",
				LabelServerHash:    ServerHash(srv.Name),
				LabelUserHash:      UserHash(user),
			},
			Annotations: map[string]string{
				AnnotationServer:  srv.Name,
				AnnotationUser:    user,
				AnnotationState:   st.state,
				AnnotationUpdated: a.now().UTC().Format(time.RFC3339),
			},
			// Deleted with the server: a new server of the same name is
			// authorized afresh.
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: mcpv1alpha1.GroupVersion.String(), Kind: "McpServer",
				Name: srv.Name, UID: srv.UID, BlockOwnerDeletion: ptr.To(false),
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{keyIssuer: []byte(st.issuer), keyClientID: []byte(st.clientID)},
	}
	if st.state == StateAuthorized {
		granted := st.granted
		if granted.IsZero() {
			granted = a.now()
		}
		s.Annotations[AnnotationGranted] = granted.UTC().Format(time.RFC3339)
		if st.scopes != "" {
			s.Annotations[AnnotationScopes] = st.scopes
		}
		if !st.expiry.IsZero() {
			s.Annotations[AnnotationExpires] = st.expiry.UTC().Format(time.RFC3339)
		}
		s.Data[keyAccessToken] = []byte(st.access)
		s.Data[keyTokenType] = []byte(st.tokenType)
		if st.refresh != "" {
			s.Data[keyRefreshToken] = []byte(st.refresh)
		}
		if !st.expiry.IsZero() {
			s.Data[keyExpiry] = []byte(st.expiry.UTC().Format(time.RFC3339))
		}
	}
	if prev == nil {
		err := a.Client.Create(ctx, s)
		if apierrors.IsAlreadyExists(err) {
			var cur corev1.Secret
			if err := a.Client.Get(ctx, client.ObjectKeyFromObject(s), &cur); err != nil {
				return fmt.Errorf("reading the authorization Secret: %w", err)
			}
			s.ResourceVersion = cur.ResourceVersion
			err = a.Client.Update(ctx, s)
		}
		if err != nil {
			return fmt.Errorf("writing the authorization Secret: %w", err)
		}
		return nil
	}
	s.ResourceVersion = prev.ResourceVersion
	if err := a.Client.Update(ctx, s); err != nil {
		return fmt.Errorf("writing the authorization Secret: %w", err)
	}
	return nil
}
