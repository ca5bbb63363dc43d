package credentials_test

import (
	"context"
	"encoding/pem"
	"errors"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-logr/logr/funcr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
)

// A certificate no test should ever find in an error or a log line.
func testCA(t *testing.T) []byte {
	t.Helper()
	ts := httptest.NewTLSServer(nil)
	defer ts.Close()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
}

func secretRef(name, key string) *mcpv1alpha1.TLSSettings {
	return &mcpv1alpha1.TLSSettings{CABundleRef: &mcpv1alpha1.CABundleReference{
		SecretKeyRef: &mcpv1alpha1.SecretKeySelector{Name: name, Key: key},
	}}
}

// Whoever may write spec.tls.caBundleRef but not read Secrets learns one
// thing from naming a Secret: that it is not usable as a bundle. Every
// cause (missing, not opted in, no key, no PEM, a broken certificate, the
// operator forbidden to read it) is the same error with the same text; the
// cause goes to the debug log, which names the Secret and never its bytes.
func TestAnUnusableCABundleReadsTheSameWhateverTheCause(t *testing.T) {
	ca := testCA(t)
	const password = "db-password-sEcReT"
	optIn := map[string]string{mcpv1alpha1.LabelCABundle: mcpv1alpha1.LabelCABundleValue}
	secret := func(name string, labels map[string]string, data string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name, Labels: labels},
			Data: map[string][]byte{"ca.crt": []byte(data)}}
	}
	kube := fake.NewClientBuilder().WithObjects(
		secret("unlabelled", nil, string(ca)),
		secret("wrong-label-value", map[string]string{mcpv1alpha1.LabelCABundle: "yes"}, string(ca)),
		secret("password", optIn, password),
		secret("broken", optIn, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"),
		secret("good", optIn, string(ca)),
		secret("credential", map[string]string{mcpv1alpha1.LabelCredential: mcpv1alpha1.LabelCredentialValue}, string(ca)),
		secret("locked", optIn, string(ca)),
	).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if key.Name == "locked" {
				return apierrors.NewForbidden(schema.GroupResource{Resource: "secrets"}, key.Name, errors.New("no"))
			}
			if key.Name == "apiserver-away" {
				return apierrors.NewServiceUnavailable("the API server is away")
			}
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()

	var logged strings.Builder
	log := funcr.New(func(prefix, args string) { logged.WriteString(prefix + " " + args + "\n") }, funcr.Options{Verbosity: 1})
	ctx := logf.IntoContext(context.Background(), log)

	for _, tc := range []struct{ name, secret, key string }{
		{"missing", "no-such-secret", "ca.crt"},
		{"not opted in", "unlabelled", "ca.crt"},
		{"opted in with another value", "wrong-label-value", "ca.crt"},
		{"no such key", "good", "bundle.pem"},
		{"no PEM", "password", "ca.crt"},
		{"a certificate that does not parse", "broken", "ca.crt"},
		{"forbidden", "locked", "ca.crt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logged.Reset()
			b, err := credentials.CABundle(ctx, kube, "team", secretRef(tc.secret, tc.key))
			var unusable *credentials.UnusableCABundleError
			if b != nil || !errors.As(err, &unusable) {
				t.Fatalf("got %v, %v; want an unusable CA bundle", b, err)
			}
			if err.Error() != credentials.CABundleNotUsableMessage {
				t.Errorf("the error reads %q, want the one message", err)
			}
			var missing *credentials.MissingError
			if errors.As(err, &missing) {
				t.Errorf("the error is also a MissingError with reason %s, which would tell the cause", missing.Reason)
			}
			line := logged.String()
			if !strings.Contains(line, `"name"="`+tc.secret+`"`) || !strings.Contains(line, `"cause"=`) {
				t.Errorf("the debug log does not name the Secret and the cause: %q", line)
			}
			if strings.Contains(line, password) || strings.Contains(line, "BEGIN CERTIFICATE") {
				t.Errorf("the debug log carries the Secret's content: %q", line)
			}
		})
	}

	// At the default level the cause is not logged at all.
	logged.Reset()
	quiet := logf.IntoContext(context.Background(), funcr.New(func(prefix, args string) { logged.WriteString(args) }, funcr.Options{}))
	if _, err := credentials.CABundle(quiet, kube, "team", secretRef("unlabelled", "ca.crt")); err == nil || logged.Len() != 0 {
		t.Errorf("at the default level: %v, logged %q", err, logged.String())
	}

	for _, name := range []string{"good", "credential"} {
		b, err := credentials.CABundle(ctx, kube, "team", secretRef(name, "ca.crt"))
		if err != nil || b == nil {
			t.Errorf("an opted-in Secret %q holding a CA: %v", name, err)
		}
	}

	// A failure to reach the API server is no verdict on the bundle.
	_, err := credentials.CABundle(ctx, kube, "team", secretRef("apiserver-away", "ca.crt"))
	var unusable *credentials.UnusableCABundleError
	if err == nil || errors.As(err, &unusable) || !apierrors.IsServiceUnavailable(err) {
		t.Errorf("API server away: %v, want its error, retried", err)
	}
}
