package mcp

import (
	"errors"
	"strings"
	"testing"
)

func TestValidToolName(t *testing.T) {
	valid := []string{"a", "getUser", "DATA_EXPORT_v2", "admin.tools.list", "x-y", "0", strings.Repeat("z", 128)}
	invalid := []string{"", strings.Repeat("z", 129), "has space", "ns/op", "comma,", "tab\t", "ünï", "semi;", "new\nline", "a\x00"}
	for _, n := range valid {
		if !ValidToolName(n) || CheckToolName(n) != nil {
			t.Errorf("%q refused", n)
		}
	}
	for _, n := range invalid {
		if ValidToolName(n) || !errors.Is(CheckToolName(n), ErrInvalidToolName) {
			t.Errorf("%q accepted", n)
		}
	}
}

func TestPrintableName(t *testing.T) {
	cases := map[string]string{
		"valid_name":                    "valid_name",
		"bad name":                      "bad name",
		"ctl\x1b[31m":                   "ctl?[31m",
		"ünï":                           "?n?",
		strings.Repeat("a", 200):        strings.Repeat("a", 64) + "...",
		strings.Repeat("é", 70):         strings.Repeat("?", 64) + "...",
		"":                              "",
		"ok/" + strings.Repeat("b", 61): "ok/" + strings.Repeat("b", 61),
	}
	for in, want := range cases {
		if got := printableName(in); got != want {
			t.Errorf("printableName(%q) = %q, want %q", in, got, want)
		}
	}
}
