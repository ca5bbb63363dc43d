package cli

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/mcp-catalog/operator/internal/gateway/personauth"
	"github.com/mcp-catalog/operator/internal/review"
)

func TestAuthorizationCommands(t *testing.T) {
	e := startCluster(t)
	ctx := context.Background()
	me, err := review.WhoAmI(ctx, e.c)
	if err != nil {
		t.Fatal(err)
	}
	const token = "tOkEn-VaLuE-never-printed"
	stored := func(server, user string) *corev1.Secret {
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: personauth.SecretName(server, user),
				Labels: map[string]string{personauth.LabelAuthorization: "true", personauth.LabelUserHash: personauth.UserHash(user),
					personauth.LabelServerHash: personauth.ServerHash(server)},
				Annotations: map[string]string{personauth.AnnotationServer: server, personauth.AnnotationUser: user,
					personauth.AnnotationState: personauth.StateAuthorized}},
			Data: map[string][]byte{"access-token": []byte(token)},
		}
		if err := e.c.Create(ctx, s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	mine := stored("records", me)
	stored("records", "alice@example.com")

	code, out, errOut := e.run(t, "authorizations")
	if code != ExitOK || !strings.Contains(out, me) || strings.Contains(out, "alice@example.com") || strings.Contains(out+errOut, token) {
		t.Fatalf("authorizations: %d\n%s%s", code, out, errOut)
	}
	code, out, _ = e.run(t, "authorizations", "--all-users")
	if code != ExitOK || !strings.Contains(out, "alice@example.com") || strings.Contains(out, token) {
		t.Fatalf("authorizations --all-users: %d\n%s", code, out)
	}

	// A Secret that merely has the name is not deleted.
	if err := e.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: personauth.SecretName("tickets", me)}}); err != nil {
		t.Fatal(err)
	}
	code, _, errOut = e.run(t, "revoke-authorization", "tickets")
	if code != ExitFailed || !strings.Contains(errOut, "left alone") {
		t.Fatalf("revoke of a Secret that is not an authorization: %d %s", code, errOut)
	}
	code, out, errOut = e.run(t, "revoke-authorization", "records")
	// The stored authorization names no authorization server: the Secret
	// goes, and the output says the tokens could not be revoked there.
	if code != ExitOK || !strings.Contains(out, "revoked; revoking at the authorization server failed") || strings.Contains(out+errOut, token) {
		t.Fatalf("revoke: %d %s%s", code, out, errOut)
	}
	if err := e.c.Get(ctx, client.ObjectKeyFromObject(mine), &corev1.Secret{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the authorization is still there: %v", err)
	}
	code, _, errOut = e.run(t, "revoke-authorization", "records")
	if code != ExitFailed || !strings.Contains(errOut, "no stored authorization") {
		t.Fatalf("a second revoke: %d %s", code, errOut)
	}
}
