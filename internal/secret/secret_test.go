package secret

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestSecretRedactsEverywhere(t *testing.T) {
	const value = "s3cr3t-VALUE-91"
	s := New(value)
	type holder struct {
		Exported   Secret
		unexported Secret
		Ptr        *Secret
	}
	hv := holder{Exported: s, unexported: s, Ptr: &s}
	var outputs []string
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%X", "%d", "%T"} {
		outputs = append(outputs, fmt.Sprintf(verb, s), fmt.Sprintf(verb, hv), fmt.Sprintf(verb, &hv))
	}
	outputs = append(outputs, s.String(), s.GoString(), fmt.Sprint(s), fmt.Sprintln(s))
	js, err := json.Marshal(hv)
	if err != nil {
		t.Fatal(err)
	}
	outputs = append(outputs, string(js))
	txt, _ := s.MarshalText()
	outputs = append(outputs, string(txt))
	var buf bytes.Buffer
	slog.New(slog.NewTextHandler(&buf, nil)).Info("m", "s", s, "h", hv, "group", slog.GroupValue(slog.Any("inner", s)))
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("m", "s", s, "h", hv)
	outputs = append(outputs, buf.String())
	for _, o := range outputs {
		if strings.Contains(o, value) {
			t.Fatalf("secret leaked: %q", o)
		}
	}
	if !strings.Contains(fmt.Sprintf("%v", s), "[REDACTED]") || fmt.Sprintf("%q", s) != `"[REDACTED]"` {
		t.Fatal("redaction marker missing")
	}
	if s.Reveal() != value || s.IsZero() {
		t.Fatal("Reveal lost the value")
	}
	var zero Secret
	if zero.Reveal() != "" || !zero.IsZero() || fmt.Sprint(zero) != "[REDACTED]" {
		t.Fatal("zero Secret misbehaves")
	}
}
