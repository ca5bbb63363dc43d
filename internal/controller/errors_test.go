package controller

import (
	"errors"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/credentials"
	"github.com/mcp-catalog/operator/internal/mcp"
)

// Only failures a change to the spec cures stall; everything a Secret
// rotation or the remote server can cure waits for the next attempt, since
// nothing would re-trigger a stalled server when it is cured.
func TestClassifyOperation(t *testing.T) {
	stalls := map[mcp.Kind]bool{
		mcp.KindBlockedAddress:     true,
		mcp.KindRedirect:           true,
		mcp.KindInsecureCredential: true,
		mcp.KindPageLimit:          true,
		mcp.KindToolLimit:          true,
		// The byte budget is a ceiling of the spec like the two above:
		// waiting would read up to 64 MiB again every interval.
		mcp.KindCatalogTooLarge: true,
		// A Secret value that cannot be a header is cured by rotating the
		// Secret, which is not watched.
		mcp.KindInvalidEndpoint: false,
		mcp.KindUnauthorized:    false,
		mcp.KindForbidden:       false,
		mcp.KindUnreachable:     false,
		// Cured on the server or in an unwatched CA bundle.
		mcp.KindUntrustedCertificate: false,
		mcp.KindBudgetExhausted:      false,
		mcp.KindServerError:          false,
		mcp.KindOversized:            false,
		mcp.KindUnsupportedVersion:   false,
		mcp.KindRPCError:             false,
	}
	for kind, want := range stalls {
		err := fmt.Errorf("import: %w", &mcp.Error{Kind: kind})
		reason, msg := failureReason(err)
		got := classifyOperation(err, reason, msg)
		s, stalled := asStalling(got)
		if stalled != want {
			t.Errorf("%s: stalls = %v, want %v", kind, stalled, want)
			continue
		}
		if stalled && (s.reason != reason || s.err.Error() != msg) {
			t.Errorf("%s: stall says (%s, %q), want the condition's (%s, %q)", kind, s.reason, s.err, reason, msg)
		}
	}
	if got := classifyOperation(errors.New("not from the client"), mcpv1alpha1.ReasonUnreachable, "x"); got != nil {
		t.Errorf("an error without a kind = %v, want no stall", got)
	}
}

// A reference not there yet waits; a failure to read it is transient.
func TestClassifyReference(t *testing.T) {
	missing := &credentials.MissingError{Reason: mcpv1alpha1.ReasonProfileNotReady, Err: errors.New("not Ready")}
	w, ok := asWaiting(classifyReference(fmt.Errorf("resolving: %w", missing), 7*time.Second))
	if !ok || w.after != 7*time.Second || w.reason != mcpv1alpha1.ReasonProfileNotReady {
		t.Errorf("missing reference = %+v, want a 7s wait with its reason", w)
	}
	unusable := &credentials.UnusableCABundleError{}
	w, ok = asWaiting(classifyReference(fmt.Errorf("resolving: %w", unusable), 7*time.Second))
	if !ok || w.after != 7*time.Second || w.reason != mcpv1alpha1.ReasonCABundleNotUsable {
		t.Errorf("unusable CA bundle = %+v, want a 7s wait with CABundleNotUsable", w)
	}
	boom := errors.New("the API server is away")
	got := classifyReference(boom, time.Second)
	if _, ok := asWaiting(got); ok || !errors.Is(got, boom) {
		t.Errorf("read failure = %v, want it returned as is", got)
	}
}

// A profile reports the conditions its type documents: Stalled for what
// only a spec change cures, Reconciling while it waits for its Secret, and
// neither once Ready.
func TestSetProfileConditions(t *testing.T) {
	const gen = 3
	stalled := &stallingError{reason: mcpv1alpha1.ReasonInvalidSpec, err: errors.New("not https")}
	waiting := &waitingError{after: time.Second, reason: mcpv1alpha1.ReasonSecretNotFound, err: errors.New("no Secret")}
	p := &mcpv1alpha1.McpDelegationProfile{ObjectMeta: metav1.ObjectMeta{Generation: gen}}

	setProfileConditions(p, waiting, time.Now())
	assertConditions(t, p.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonSecretNotFound),
		want(mcpv1alpha1.ConditionReconciling, metav1.ConditionTrue, mcpv1alpha1.ReasonProgressing))

	setProfileConditions(p, stalled, time.Now())
	assertConditions(t, p.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionReady, metav1.ConditionFalse, mcpv1alpha1.ReasonInvalidSpec),
		want(mcpv1alpha1.ConditionStalled, metav1.ConditionTrue, mcpv1alpha1.ReasonInvalidSpec))

	setProfileConditions(p, nil, time.Now())
	assertConditions(t, p.Status.Conditions, gen,
		want(mcpv1alpha1.ConditionReady, metav1.ConditionTrue, mcpv1alpha1.ReasonSucceeded))
}
