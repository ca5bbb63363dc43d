package console

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"sort"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
	"github.com/mcp-catalog/operator/internal/review"
)

func (c *Console) routes() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets/static")
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", c.servePage)
	mux.HandleFunc("GET /events", c.serveEvents)
	mux.HandleFunc("GET /api/view", c.serveView)
	mux.HandleFunc("POST /api/tools/approve", c.approveDefinition)
	mux.HandleFunc("POST /api/tools/enable", c.enableTool)
	mux.HandleFunc("POST /api/calls/decide", c.decideCall)
	mux.HandleFunc("GET /api/authorizations", c.listAuthorizations)
	mux.HandleFunc("POST /api/authorizations/revoke", c.revokeAuthorization)
	return mux
}

// pageData is what the page template is given: nothing from a server or
// an agent.
type pageData struct {
	CSRF  string
	Scope string
}

func (c *Console) servePage(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = page.Execute(w, pageData{CSRF: c.guard.csrf, Scope: c.opts.Namespace})
}

func (c *Console) currentView() []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.view
}

func (c *Console) serveView(w http.ResponseWriter, _ *http.Request) {
	v := c.currentView()
	if v == nil {
		http.Error(w, "not ready", http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(v)
}

// serveEvents streams the view as Server-Sent Events: the current one at
// once, then each new one.
func (c *Console) serveEvents(w http.ResponseWriter, r *http.Request) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "streaming unsupported", http.StatusInternalServerError)
		return
	}
	ch := make(chan []byte, 1)
	c.mu.Lock()
	c.subs[ch] = struct{}{}
	if c.view != nil {
		ch <- c.view
	}
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.subs, ch)
		c.mu.Unlock()
	}()
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	flusher.Flush()
	keepAlive := time.NewTicker(15 * time.Second)
	defer keepAlive.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case v := <-ch:
			// JSON has no raw newline, so the view is one data line.
			if _, err := io.WriteString(w, "event: view\ndata: "+string(v)+"\n\n"); err != nil {
				return
			}
		case <-keepAlive.C:
			if _, err := io.WriteString(w, ": keep-alive\n\n"); err != nil {
				return
			}
		}
		flusher.Flush()
	}
}

// whoAmI is the user's name, asked of the API server until it answers.
func (c *Console) whoAmI(ctx context.Context, problems map[string]string) string {
	c.mu.Lock()
	user := c.user
	c.mu.Unlock()
	if user != "" {
		return user
	}
	user, err := review.WhoAmI(ctx, c.opts.Client)
	if err != nil {
		problems["asking who you are"] = err.Error()
		return ""
	}
	c.mu.Lock()
	c.user = user
	c.mu.Unlock()
	return user
}

func sortProblems(p []Problem) {
	sort.Slice(p, func(i, j int) bool { return p[i].What < p[j].What })
}

// maxBody bounds a change request's body.
const maxBody = 16 << 10

// readJSON decodes a change request; a malformed one is answered here.
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		answer(w, http.StatusBadRequest, "", "the request is not the JSON this console sends: "+err.Error())
		return false
	}
	return true
}

// outcome is what a change request answers: a message for the page on
// success, or the error, as the API server (or the rule that refused it)
// said it.
type outcome struct {
	Message string `json:"message,omitempty"`
	Error   string `json:"error,omitempty"`
}

func answer(w http.ResponseWriter, code int, msg, errMsg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(outcome{Message: msg, Error: errMsg})
}

// fail answers a refused change with the refusal's own words and a status
// that says whose refusal it was.
func fail(w http.ResponseWriter, err error) {
	var (
		nf      *review.NotFoundError
		changed *review.DefinitionChangedError
		owned   *review.FieldOwnedError
		own     *review.OwnCallError
		closed  *review.ClosedError
		api     *review.APIError
	)
	code := http.StatusBadGateway
	msg := err.Error()
	switch {
	case errors.As(err, &nf):
		code = http.StatusNotFound
	case errors.As(err, &changed):
		code = http.StatusConflict
		msg += "; the page shows the current definition: review it again"
	case errors.As(err, &owned), errors.As(err, &closed), errors.Is(err, review.ErrStale), errors.Is(err, review.ErrNotImported):
		code = http.StatusConflict
	case errors.As(err, &own):
		code = http.StatusForbidden
	case errors.As(err, &api):
		var st apierrors.APIStatus
		if errors.As(api.Err, &st) && st.Status().Code >= 400 {
			code = int(st.Status().Code)
		}
		msg = "the API server refused: " + msg
	}
	answer(w, code, "", msg)
}

// toolRequest names a tool, prompt or resource by its kind; Hash is the
// definition the page showed.
type toolRequest struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Hash      string `json:"hash,omitempty"`
	Enabled   bool   `json:"enabled,omitempty"`
}

// kindTool is the kind of a tool in a change request; review names the
// other two.
const kindTool = "McpTool"

// knownKind refuses a request for a kind the console does not approve or
// enable: only McpTool, McpPrompt and McpResource are routed anywhere.
func knownKind(w http.ResponseWriter, kind string) bool {
	switch kind {
	case kindTool, review.KindPrompt, review.KindResource:
		return true
	}
	answer(w, http.StatusBadRequest, "", "the kind is McpTool, McpPrompt or McpResource")
	return false
}

// inScope refuses a request outside the console's namespace.
func (c *Console) inScope(w http.ResponseWriter, ns, name string) bool {
	if ns == "" || name == "" || (c.opts.Namespace != "" && ns != c.opts.Namespace) {
		answer(w, http.StatusBadRequest, "", "the request names no object of the namespace this console shows")
		return false
	}
	return true
}

// approveDefinition approves exactly the hash the page showed, as
// `kubectl mcp approve --hash` does, for a tool, prompt or resource.
func (c *Console) approveDefinition(w http.ResponseWriter, r *http.Request) {
	var req toolRequest
	if !readJSON(w, r, &req) || !c.inScope(w, req.Namespace, req.Name) || !knownKind(w, req.Kind) {
		return
	}
	if !review.HashPattern.MatchString(req.Hash) {
		answer(w, http.StatusBadRequest, "", "no definition hash to approve")
		return
	}
	var err error
	if req.Kind == kindTool {
		err = review.Approve(r.Context(), c.opts.Client, req.Namespace, req.Name, req.Hash, false)
	} else {
		err = review.ApproveFeature(r.Context(), c.opts.Client, req.Kind, req.Namespace, req.Name, req.Hash, false)
	}
	if err != nil {
		fail(w, err)
		return
	}
	answer(w, http.StatusOK, "approved "+req.Hash+" for "+req.Kind+" "+req.Namespace+"/"+req.Name, "")
}

// enableTool enables or disables a tool, prompt or resource.
func (c *Console) enableTool(w http.ResponseWriter, r *http.Request) {
	var req toolRequest
	if !readJSON(w, r, &req) || !c.inScope(w, req.Namespace, req.Name) || !knownKind(w, req.Kind) {
		return
	}
	var err error
	if req.Kind == kindTool {
		err = review.SetEnabled(r.Context(), c.opts.Client, req.Namespace, req.Name, req.Enabled, false)
	} else {
		err = review.SetFeatureEnabled(r.Context(), c.opts.Client, req.Kind, req.Namespace, req.Name, req.Enabled, false)
	}
	if err != nil {
		fail(w, err)
		return
	}
	verb := "disabled"
	if req.Enabled {
		verb = "enabled"
	}
	answer(w, http.StatusOK, req.Kind+" "+req.Namespace+"/"+req.Name+" "+verb, "")
}

// decideRequest is a person's answer to a waiting call.
type decideRequest struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Decision  string `json:"decision"`
	Reason    string `json:"reason"`
}

// maxReason is the API's bound on a decision's reason.
const maxReason = 1024

func (c *Console) decideCall(w http.ResponseWriter, r *http.Request) {
	var req decideRequest
	if !readJSON(w, r, &req) || !c.inScope(w, req.Namespace, req.Name) {
		return
	}
	d := mcpv1alpha1.CallDecision(req.Decision)
	if d != mcpv1alpha1.CallApproved && d != mcpv1alpha1.CallDenied {
		answer(w, http.StatusBadRequest, "", "the decision is Approved or Denied")
		return
	}
	if len([]rune(req.Reason)) > maxReason {
		answer(w, http.StatusBadRequest, "", "the reason is longer than 1024 characters")
		return
	}
	user, err := review.WhoAmI(r.Context(), c.opts.Client)
	if err != nil {
		fail(w, err)
		return
	}
	if err := review.DecideCall(r.Context(), c.opts.Client, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, d, user, req.Reason); err != nil {
		fail(w, err)
		return
	}
	answer(w, http.StatusOK, "McpCallApproval "+req.Namespace+"/"+req.Name+" "+string(d)+" by "+user, "")
}
