package console

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/gateway/personauth"
)

// A person sees their own upstream authorizations in the console and
// revokes one; another person's is neither listed nor revoked, even by a
// person whose RBAC lets them list, read and delete every Secret of the
// namespace. The attack: bob's page asks his console for alice's
// authorization by its Secret's name, as a crafted request would.
func TestAuthorizationsPage(t *testing.T) {
	chromium := requireTools(t)
	c := startCluster(t)
	b := startBrowser(t, chromium)
	ctx := context.Background()
	// Both may do to the namespace's Secrets whatever revoking needs, and
	// more: list everyone's.
	rules := []rbacv1.PolicyRule{
		{APIGroups: []string{mcpv1alpha1.GroupVersion.Group}, Resources: []string{"mcpservers", "mcptools", "mcpcallapprovals"}, Verbs: []string{"get", "list", "watch"}},
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "delete"}},
	}
	c.person(t, "alice", rules...)
	bob := c.person(t, "bob", rules...)

	// Authorizations as the gateway writes them. Their authorization
	// server is not reachable (a closed port), so revoking says it failed
	// there and deletes them anyway.
	granted := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	tokens := map[string]string{}
	stored := func(user string) *corev1.Secret {
		tokens[user] = "access-of-" + user + "-never-shown"
		s := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.ns, Name: personauth.SecretName(serverName, user),
				Labels: map[string]string{personauth.LabelAuthorization: "true", personauth.LabelUserHash: personauth.UserHash(user),
					personauth.LabelServerHash: personauth.ServerHash(serverName)},
				Annotations: map[string]string{personauth.AnnotationServer: serverName, personauth.AnnotationUser: user,
					personauth.AnnotationState: personauth.StateAuthorized, personauth.AnnotationGranted: granted,
					personauth.AnnotationUpdated: granted, personauth.AnnotationScopes: "openid records.read",
					personauth.AnnotationExpires: time.Now().Add(time.Hour).UTC().Format(time.RFC3339)}},
			Data: map[string][]byte{"access-token": []byte(tokens[user]), "refresh-token": []byte("refresh-of-" + user),
				"issuer": []byte("https://127.0.0.1:1"), "client-id": []byte("gateway")},
		}
		must(t, c.admin.Create(ctx, s))
		return s
	}
	alices, bobs := stored("alice"), stored("bob")

	p := b.tab(t)
	p.open(t, c.startConsole(t, bob))
	row := `#authorizations-body tr[data-key="` + c.ns + "/" + serverName + `"]`
	p.waitJS(t, "bob's authorization listed", `document.querySelector(`+js(row)+`) !== null`)

	t.Run("bob sees his own only", func(t *testing.T) {
		if n := eval[int](t, p, `document.querySelectorAll('#authorizations-body tbody tr').length`); n != 1 {
			t.Fatalf("%d authorizations listed, want bob's one", n)
		}
		shown := p.text(t, "#authorizations")
		for _, want := range []string{serverName, "Authorized", "openid records.read"} {
			if !strings.Contains(shown, want) {
				t.Errorf("the page lacks %q: %s", want, shown)
			}
		}
		// What the console answers the page, not only what it draws.
		var got struct {
			User  string `json:"user"`
			Items []struct {
				Name string `json:"name"`
			} `json:"items"`
		}
		status, answer := fetchFromPage(t, p, "GET", "/api/authorizations", "")
		if status != 200 {
			t.Fatalf("listing: %d %s", status, answer)
		}
		must(t, json.Unmarshal([]byte(answer), &got))
		if got.User != "bob" || len(got.Items) != 1 || got.Items[0].Name != bobs.Name {
			t.Fatalf("the console listed %+v for bob", got)
		}
	})

	t.Run("bob cannot revoke alice's", func(t *testing.T) {
		body, _ := json.Marshal(map[string]string{"namespace": c.ns, "name": alices.Name})
		status, answer := fetchFromPage(t, p, "POST", "/api/authorizations/revoke", string(body))
		if status != 403 || !strings.Contains(answer, "not one of your authorizations") {
			t.Fatalf("bob's revoke of alice's authorization was answered %d %s", status, answer)
		}
		must(t, c.admin.Get(ctx, client.ObjectKeyFromObject(alices), &corev1.Secret{}))
	})

	t.Run("bob revokes his own", func(t *testing.T) {
		p.run(t, "revoking", chromedp.Click(chromedp.CSS(row+` button[data-action="revoke-authorization"]`)))
		p.waitJS(t, "the outcome", `document.querySelector('#flash[data-kind="ok"]') !== null`)
		msg := p.text(t, "#flash")
		if !strings.Contains(msg, "revoked; revoking at the authorization server failed") {
			t.Errorf("the outcome shown: %q", msg)
		}
		if err := c.admin.Get(ctx, client.ObjectKeyFromObject(bobs), &corev1.Secret{}); !apierrors.IsNotFound(err) {
			t.Fatalf("bob's authorization is still stored: %v", err)
		}
		must(t, c.admin.Get(ctx, client.ObjectKeyFromObject(alices), &corev1.Secret{}))
		p.waitJS(t, "the list without it", `document.querySelector(`+js(row)+`) === null`)
		shown := eval[string](t, p, `document.body.innerText`)
		for _, v := range tokens {
			if strings.Contains(shown, v) {
				t.Fatal("the page shows a token")
			}
		}
	})
}

// fetchFromPage makes a request from the console's page with its CSRF
// token, as the page's own script (or a script injected into it) would,
// and returns the status and body of the answer.
func fetchFromPage(t *testing.T, p *page, method, path, body string) (int, string) {
	t.Helper()
	init := `{method: ` + js(method) + `, credentials: 'same-origin'`
	if method != "GET" {
		init += `, headers: {'Content-Type': 'application/json', 'X-CSRF-Token': document.querySelector('meta[name="csrf-token"]').content}, body: ` + js(body)
	}
	init += `}`
	eval[bool](t, p, `window.__answer = null; fetch(`+js(path)+`, `+init+`).then(r => r.text().then(b => { window.__answer = {status: r.status, body: b}; })); true`)
	p.waitJS(t, "the console's answer to "+method+" "+path, `window.__answer !== null`)
	return eval[int](t, p, `window.__answer.status`), eval[string](t, p, `window.__answer.body`)
}
