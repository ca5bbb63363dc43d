package registry

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

// NotProven is what every import says: the registry records who published
// an entry (a GitHub account, a DNS or HTTP challenge for the name's
// namespace), not who answers at the URL the entry names.
const NotProven = "the registry does not prove who controls a remote server's URL: " +
	"its entry is the publisher's claim, so the data class of what the server returns " +
	"and whether calls need a person's approval are your decision"

// maxServerName is the longest McpServer name the API accepts.
const maxServerName = 45

// Choices are what a person decides when importing a registry entry; the
// registry offers nothing to decide them from.
type Choices struct {
	// Namespace of the McpServer.
	Namespace string
	// Name of the McpServer; empty derives it from the registry name
	// (DefaultName).
	Name string
	// DataClass of what the server's tools return. Required.
	DataClass mcpv1alpha1.DataClass
	// ApprovalRequired says whether calls need a person's approval.
	// Required: nil is refused.
	ApprovalRequired *bool
	// Remote picks among the entry's Streamable HTTP remotes (0: the
	// first).
	Remote int
}

// Draft is an McpServer built from a registry entry, with what a person
// should know before applying it.
type Draft struct {
	Server *mcpv1alpha1.McpServer
	// Notes say what the entry asks for that the draft does not carry (a
	// header, say) and what was left out (SSE remotes, packages).
	Notes []string
}

// Manifest turns one registry entry into an McpServer draft: the entry's
// Streamable HTTP remote as spec.url, the person's choices as dataClass and
// approvalRequired, no auth, and the registry, name and version as
// annotations. registryURL is the registry's URL (recorded normalised). The
// McpServer's tools are disabled until someone enables them, as every
// imported tool is.
func Manifest(registryURL string, r *ServerResponse, c Choices) (*Draft, error) {
	op := "import"
	if ValidName(r.Server.Name) {
		op += " " + r.Server.Name
	}
	fail := func(reason Reason, format string, args ...any) error {
		return &Error{Reason: reason, Op: op, Detail: fmt.Sprintf(format, args...)}
	}
	regURL, err := NormalizeURL(registryURL)
	if err != nil {
		return nil, err
	}
	if !c.DataClass.Valid() {
		return nil, fail(ReasonChoiceMissing, "choose the data class (Public, Internal, Confidential or Restricted): %s", NotProven)
	}
	if c.ApprovalRequired == nil {
		return nil, fail(ReasonChoiceMissing, "choose whether calls need approval: %s", NotProven)
	}
	if !ValidName(r.Server.Name) || checkPathValue(r.Server.Version, maxVersionBytes) != nil {
		return nil, fail(ReasonNotImportable, "the entry's name or version is not valid")
	}
	remotes := r.Server.StreamableRemotes()
	if len(remotes) == 0 {
		return nil, fail(ReasonNotImportable, "the entry has no streamable-http remote (packages and SSE remotes are not imported: the operator only calls remote servers over Streamable HTTP)")
	}
	if c.Remote < 0 || c.Remote >= len(remotes) {
		return nil, fail(ReasonNotImportable, "remote %d does not exist: the entry has %d streamable-http remotes", c.Remote, len(remotes))
	}
	remote := remotes[c.Remote]
	if err := checkRemoteURL(remote.URL); err != nil {
		return nil, fail(ReasonNotImportable, "remote URL: %s", err)
	}
	name := c.Name
	if name == "" {
		name = DefaultName(r.Server.Name)
	}
	if !validServerName(name) {
		return nil, fail(ReasonNotImportable, "McpServer name %q is not a DNS label of at most %d characters", name, maxServerName)
	}
	s := &mcpv1alpha1.McpServer{
		TypeMeta: metav1.TypeMeta{APIVersion: mcpv1alpha1.GroupVersion.String(), Kind: "McpServer"},
		ObjectMeta: metav1.ObjectMeta{
			Namespace: c.Namespace,
			Name:      name,
			Annotations: map[string]string{
				mcpv1alpha1.AnnotationRegistryURL:     regURL,
				mcpv1alpha1.AnnotationRegistryName:    r.Server.Name,
				mcpv1alpha1.AnnotationRegistryVersion: r.Server.Version,
			},
		},
		Spec: mcpv1alpha1.McpServerSpec{
			URL:              remote.URL,
			DataClass:        c.DataClass,
			ApprovalRequired: c.ApprovalRequired,
		},
	}
	d := &Draft{Server: s}
	if r.Status() != StatusActive {
		d.Notes = append(d.Notes, fmt.Sprintf("the registry marks version %s %s", r.Server.Version, r.Status()))
	}
	for _, h := range remote.Headers {
		if !h.IsRequired {
			continue
		}
		if h.IsSecret {
			d.Notes = append(d.Notes, fmt.Sprintf("the remote asks for the secret header %s: put the value in a Secret labelled %s=%s and reference it in spec.auth.header (or spec.auth.bearer for Authorization)", sanitizeHeader(h.Name), mcpv1alpha1.LabelCredential, mcpv1alpha1.LabelCredentialValue))
		} else {
			d.Notes = append(d.Notes, fmt.Sprintf("the remote asks for the header %s, which the draft does not send", sanitizeHeader(h.Name)))
		}
	}
	if n := len(remotes) - 1; n > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("the entry has %d more streamable-http remote(s); --remote picks another", n))
	}
	if n := len(r.Server.Remotes) - len(remotes); n > 0 {
		d.Notes = append(d.Notes, fmt.Sprintf("%d SSE or other remote(s) left out: the operator speaks Streamable HTTP only", n))
	}
	if strings.HasPrefix(strings.ToLower(remote.URL), "http://") {
		d.Notes = append(d.Notes, "the remote uses plain http: no credential is sent over it unless spec.allowCredentialOverHTTP is set")
	}
	return d, nil
}

// DefaultName derives an McpServer name from a registry name: the part
// after the slash, lower-cased, every run of other characters than letters
// and digits made one '-', at most 45 characters. A name that had to be
// shortened, or from which nothing is left, ends in a hash of the whole
// registry name so that two such names do not meet.
func DefaultName(registryName string) string {
	_, short, ok := strings.Cut(registryName, "/")
	if !ok {
		short = registryName
	}
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(short) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
			dash = false
			continue
		}
		if !dash && b.Len() > 0 {
			b.WriteByte('-')
			dash = true
		}
	}
	name := strings.TrimRight(b.String(), "-")
	if name != "" && len(name) <= maxServerName {
		return name
	}
	sum := sha256.Sum256([]byte(registryName))
	suffix := hex.EncodeToString(sum[:])[:8]
	keep := maxServerName - len(suffix) - 1
	if len(name) > keep {
		name = strings.TrimRight(name[:keep], "-")
	}
	if name == "" {
		return "server-" + suffix
	}
	return name + "-" + suffix
}

func validServerName(s string) bool {
	if s == "" || len(s) > maxServerName || s[0] == '-' || s[len(s)-1] == '-' {
		return false
	}
	for _, r := range s {
		if (r < 'a' || r > 'z') && (r < '0' || r > '9') && r != '-' {
			return false
		}
	}
	return true
}

// checkRemoteURL refuses what the McpServer API refuses, and more: a URL
// template (its variables are the person's to fill in) and any query (it
// may carry a credential, which belongs in a Secret).
func checkRemoteURL(raw string) error {
	if strings.ContainsAny(raw, "{}") {
		return fmt.Errorf("it is a template with variables; declare the McpServer by hand with the URL filled in")
	}
	if len(raw) > 2048 {
		return fmt.Errorf("longer than 2048 characters")
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return fmt.Errorf("not a URL")
	case u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("the scheme is not https or http")
	case u.Hostname() == "":
		return fmt.Errorf("no host")
	case u.User != nil:
		return fmt.Errorf("it carries user information; a credential belongs in a Secret")
	case u.RawQuery != "" || u.ForceQuery:
		return fmt.Errorf("it carries a query, which may hold a credential; declare the McpServer by hand (a URL that holds a credential goes in a Secret, spec.urlFrom)")
	case u.Fragment != "" || strings.Contains(raw, "#"):
		return fmt.Errorf("it carries a fragment")
	}
	return nil
}

// sanitizeHeader keeps a header name printable and short: it comes from the
// registry entry.
func sanitizeHeader(s string) string {
	var b strings.Builder
	for _, r := range s {
		if b.Len() >= 64 {
			b.WriteString("...")
			break
		}
		if r > 0x20 && r < 0x7f {
			b.WriteRune(r)
		} else {
			b.WriteByte('?')
		}
	}
	return b.String()
}

// Importable says whether Manifest can draft an McpServer from r once a
// person has made the choices: nil, or the *Error Manifest would return.
func Importable(r *ServerResponse) error {
	yes := true
	_, err := Manifest(OfficialURL, r, Choices{DataClass: mcpv1alpha1.DataClassRestricted, ApprovalRequired: &yes, Name: "x"})
	return err
}
