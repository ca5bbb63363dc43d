package toolname

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"
)

func TestObjectNameExamples(t *testing.T) {
	cases := []struct{ server, remote, want string }{
		{"docs", "search_docs", "docs.search-docs"},
		{"docs", "search", "docs.search"},
		{"docs", "resolve-library-id", "docs.resolve--library--id"},
		{"docs", "a_b-c", "docs.a-b--c"},
		{"docs", "createIssue", "docs.x.mnzgkylumvexg43vmu"},
		{"docs", "a.b", "docs.x.mexge"},
		{"docs", "_private", "docs.x.l5yhe2lwmf2gk"},
		{"docs", "a__b", "docs.x.mfpv6yq"},
	}
	for _, c := range cases {
		got, err := ObjectName(c.server, c.remote)
		if err != nil {
			t.Fatalf("ObjectName(%q, %q): %v", c.server, c.remote, err)
		}
		if got != c.want {
			t.Errorf("ObjectName(%q, %q) = %q, want %q", c.server, c.remote, got, c.want)
		}
	}
}

func TestObjectNameRejectsIllegalInput(t *testing.T) {
	for _, c := range []struct{ server, remote string }{
		{"docs", ""},
		{"docs", "has space"},
		{"docs", "slash/name"},
		{"docs", strings.Repeat("a", 129)},
		{"Docs", "ok"},
		{"with.dot", "ok"},
		{strings.Repeat("s", 46), "ok"},
	} {
		if _, err := ObjectName(c.server, c.remote); err == nil {
			t.Errorf("ObjectName(%q, %q) accepted an illegal name", c.server, c.remote)
		}
	}
}

// The rule must yield a valid object name and round-trip for every legal
// remote name, including the longest under the longest server name.
func TestObjectNameValidAndReversible(t *testing.T) {
	alphabet := "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"
	r := rand.New(rand.NewPCG(1, 2))
	server := strings.Repeat("s", MaxServerNameLength)
	seen := map[string]string{}
	names := []string{strings.Repeat(".", 128), strings.Repeat("Z", 128), strings.Repeat("a_", 64)[:127]}
	for i := 0; i < 20000; i++ {
		n := 1 + r.IntN(128)
		var b strings.Builder
		for j := 0; j < n; j++ {
			b.WriteByte(alphabet[r.IntN(len(alphabet))])
		}
		names = append(names, b.String())
		// Short lowercase names exercise the readable form's edges.
		b.Reset()
		for j := 0; j < 1+r.IntN(6); j++ {
			b.WriteByte("ab_-"[r.IntN(4)])
		}
		names = append(names, b.String())
	}
	for _, remote := range names {
		obj, err := ObjectName(server, remote)
		if err != nil {
			t.Fatalf("ObjectName(%q): %v", remote, err)
		}
		if errs := validation.IsDNS1123Subdomain(obj); len(errs) > 0 {
			t.Fatalf("ObjectName(%q) = %q is not a valid object name: %v", remote, obj, errs)
		}
		if prev, dup := seen[obj]; dup && prev != remote {
			t.Fatalf("%q and %q share the object name %q", prev, remote, obj)
		}
		seen[obj] = remote
		s, rn, err := Decode(obj)
		if err != nil || s != server || rn != remote {
			t.Fatalf("Decode(%q) = %q, %q, %v; want %q, %q", obj, s, rn, err, server, remote)
		}
	}
}

func TestDecodeRejectsForeignNames(t *testing.T) {
	for _, name := range []string{"plain", "docs.", "docs.x.!!", "docs.a--", "docs.-a", "docs.a---b", "docs.x.mfra"} {
		if s, r, err := Decode(name); err == nil {
			t.Errorf("Decode(%q) = %q, %q; want an error", name, s, r)
		}
	}
}

func TestLocalNameAndGroup(t *testing.T) {
	if got := LocalName("docs", "search_docs"); got != "mcp_docs_search_docs" {
		t.Errorf("LocalName = %q", got)
	}
	if got := Group("docs"); got != "mcp_docs" {
		t.Errorf("Group = %q", got)
	}
}

func TestObjectNameOfLocalInvertsTheLocalName(t *testing.T) {
	for _, tc := range []struct{ server, remote string }{
		{"docs", "echo"},
		{"docs", "search_docs"},
		{"my-docs", "search_docs"},
		{"docs", "createIssue"},
		{"docs", "resolve-library"},
		{"docs", "_leading"},
		{"docs", "with.dot_and_end"},
		{"a1", "x"},
	} {
		want, err := ObjectName(tc.server, tc.remote)
		if err != nil {
			t.Fatal(err)
		}
		local := LocalName(tc.server, tc.remote)
		got, err := ObjectNameOfLocal(local)
		if err != nil || got != want {
			t.Errorf("ObjectNameOfLocal(%q) = %q, %v; want %q", local, got, err, want)
		}
		server, remote, err := ParseLocalName(local)
		if err != nil || server != tc.server || remote != tc.remote {
			t.Errorf("ParseLocalName(%q) = %q, %q, %v; want %q, %q", local, server, remote, err, tc.server, tc.remote)
		}
	}
	for _, local := range []string{"", "echo", "mcp_", "mcp_docs", "mcp__echo", "mcp_Docs_echo", "MCP_docs_echo", "mcp_docs_bad/name"} {
		if got, err := ObjectNameOfLocal(local); err == nil {
			t.Errorf("ObjectNameOfLocal(%q) = %q, want no name", local, got)
		}
	}
}

// One length rule holds for the importer (LocalNameFits), the names the
// gateway quotes (ValidLocalName) and the names it resolves
// (ParseLocalName).
func TestLocalNameLengthIsOneRule(t *testing.T) {
	const server = "docs"
	longest := strings.Repeat("a", MaxLocalNameLength-len(LocalName(server, "")))
	tooLong := longest + "a"
	if !LocalNameFits(server, longest) || !ValidLocalName(LocalName(server, longest)) {
		t.Error("the longest local name was rejected")
	}
	if _, _, err := ParseLocalName(LocalName(server, longest)); err != nil {
		t.Errorf("the longest local name does not parse: %v", err)
	}
	if LocalNameFits(server, tooLong) || ValidLocalName(LocalName(server, tooLong)) {
		t.Error("a local name one character too long was accepted")
	}
	if _, _, err := ParseLocalName(LocalName(server, tooLong)); err == nil {
		t.Error("a local name one character too long parses")
	}
}

func TestValidLocalNameBoundsWhatMayBeQuoted(t *testing.T) {
	for _, name := range []string{"", strings.Repeat("a", MaxLocalNameLength+1), "mcp_docs_a b", "mcp_docs_\n", "mcp_docs_ä"} {
		if ValidLocalName(name) {
			t.Errorf("%q was accepted", name)
		}
	}
}

func TestSharedLocalNamesNeverNameOwnTools(t *testing.T) {
	name := SharedLocalName("platform-docs", "search_docs")
	if name != "mcps_platform-docs_search_docs" {
		t.Fatalf("SharedLocalName = %q", name)
	}
	shared, remote, err := ParseSharedLocalName(name)
	if err != nil || shared != "platform-docs" || remote != "search_docs" {
		t.Fatalf("ParseSharedLocalName(%q) = %q, %q, %v", name, shared, remote, err)
	}
	if !IsSharedLocalName(name) || IsSharedLocalName(LocalName("mcps", "x")) {
		t.Error("IsSharedLocalName does not tell shared names from own ones")
	}
	// No shared name parses as an own tool's local name, and no own local
	// name as a shared one; the shared name is also the RBAC resource name,
	// which no McpTool object can have.
	if _, err := ObjectNameOfLocal(name); err == nil {
		t.Errorf("the shared name %q names an own McpTool", name)
	}
	if _, _, err := ParseSharedLocalName(LocalName("mcps", "x")); err == nil {
		t.Error("an own local name parses as a shared one")
	}
	if !strings.Contains(name, "_") {
		t.Error("a shared name must hold a character no object name holds")
	}
	for _, bad := range []string{"mcps_", "mcps_docs", "mcps_Docs_x", "mcps_docs_", "mcp_docs_x", "mcps_docs_a b"} {
		if _, _, err := ParseSharedLocalName(bad); err == nil {
			t.Errorf("ParseSharedLocalName(%q) succeeded", bad)
		}
	}
}

// The hand-written checks answer as the patterns they replace, for every
// string of up to four characters over an alphabet that covers each
// class, and for long ones.
func TestNamesMatchTheirPatterns(t *testing.T) {
	remote := regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
	readableRE := regexp.MustCompile(`^[a-z0-9]+([_-][a-z0-9]+)*$`)
	server := regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)
	alphabet := []string{"a", "Z", "0", "_", "-", ".", " ", "é"}
	var names []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		names = append(names, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 4)
	for _, n := range []int{44, 45, 46, 127, 128, 129} {
		names = append(names, strings.Repeat("a", n), strings.Repeat("a-", n/2)+"a")
	}
	for _, n := range names {
		if got, want := ValidRemoteName(n), remote.MatchString(n); got != want {
			t.Errorf("ValidRemoteName(%q) = %v, the pattern says %v", n, got, want)
		}
		if got, want := readable(n), readableRE.MatchString(n); got != want {
			t.Errorf("readable(%q) = %v, the pattern says %v", n, got, want)
		}
		if got, want := ValidServerName(n), len(n) <= MaxServerNameLength && server.MatchString(n); got != want {
			t.Errorf("ValidServerName(%q) = %v, the pattern says %v", n, got, want)
		}
	}
}
