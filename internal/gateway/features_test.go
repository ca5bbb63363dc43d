package gateway

import "testing"

func TestTemplateMatchesOnlyExpansions(t *testing.T) {
	cases := []struct {
		template, uri string
		want          bool
	}{
		{"docs://files/{name}", "docs://files/a.md", true},
		{"docs://files/{name}", "docs://files/", false},
		{"docs://files/{name}", "docs://files/a/b", false},
		{"docs://files/{name}", "docs://other/a", false},
		{"docs://files/{name}", "docs://files/a?x=1", false},
		{"docs://files/{+path}", "docs://files/a/b/c", true},
		{"file:///{+path}{?rev}", "file:///a/b?rev=2", true},
		{"db://t{/table}", "db://t/users", true},
		{"a.b://{x}", "aXb://y", false},
		{"docs://{name", "docs://x", false},
	}
	for _, c := range cases {
		if got := templateMatches(c.template, c.uri); got != c.want {
			t.Errorf("templateMatches(%q, %q) = %t, want %t", c.template, c.uri, got, c.want)
		}
	}
}
