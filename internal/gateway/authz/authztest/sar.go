// Package authztest serves SubjectAccessReviews for tests of what the
// gateway asks RBAC.
package authztest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	"k8s.io/client-go/rest"
)

// SARServer answers SubjectAccessReviews over HTTP, allowing the tools
// named in Allow, and counts the reviews it answered.
type SARServer struct {
	mu sync.Mutex
	// Allow names the tools a review allows.
	Allow map[string]bool
	// Reviews are the reviews answered, in order.
	Reviews []authorizationv1.SubjectAccessReviewSpec
	// Fail answers every review 403, a review that could not be made.
	Fail bool
}

func (s *SARServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var sar authorizationv1.SubjectAccessReview
	if err := json.NewDecoder(r.Body).Decode(&sar); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Fail {
		// Not retried by the authorizer: a 403 on the review itself.
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Forbidden","code":403}`))
		return
	}
	s.Reviews = append(s.Reviews, sar.Spec)
	sar.Status.Allowed = s.Allow[sar.Spec.ResourceAttributes.Name]
	sar.Status.Denied = !sar.Status.Allowed
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&sar)
}

// Count is how many reviews it answered.
func (s *SARServer) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Reviews)
}

// SetFailing makes every review fail (or answer again).
func (s *SARServer) SetFailing(fail bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Fail = fail
}

// Client is a SubjectAccessReview client of s, served until the test
// ends, with no client-side rate limit (a test of the authorizer's own
// shares must not meet client-go's).
func Client(t testing.TB, s *SARServer) authorizationv1client.AuthorizationV1Interface {
	t.Helper()
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	c, err := authorizationv1client.NewForConfig(&rest.Config{Host: hs.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
