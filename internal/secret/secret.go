// Package secret holds credential values in a type that never prints them,
// so that packages handling credentials (the MCP client, token exchange)
// share one redaction rule without depending on each other.
package secret

import (
	"fmt"
	"io"
	"log/slog"
	"time"
)

// redacted is what a Secret prints as, in every format.
const redacted = "[REDACTED]"

// Secret holds a credential value and refuses to print it. Every formatting
// path (fmt verbs including %#v and %q, json, text marshalling, slog) yields
// "[REDACTED]"; only Reveal returns the value.
//
// The value is held inside a closure rather than a string field. Where fmt
// cannot call a Secret's methods (a Secret in an unexported field of another
// struct), it prints the fields by reflection, and a string field would come
// out verbatim; a func prints as an address. The price is that Secret and
// Credential are not comparable with ==; a struct holding a *Credential
// still is.
type Secret struct {
	reveal func() string
}

// New wraps value.
func New(value string) Secret { return Secret{reveal: func() string { return value }} }

// Reveal returns the wrapped value. Call it only where the value is put on the
// wire.
func (s Secret) Reveal() string {
	if s.reveal == nil {
		return ""
	}
	return s.reveal()
}

// IsZero reports whether the Secret holds no value.
func (s Secret) IsZero() bool { return s.Reveal() == "" }

// String implements fmt.Stringer.
func (Secret) String() string { return redacted }

// GoString implements fmt.GoStringer (%#v).
func (Secret) GoString() string { return redacted }

// Format implements fmt.Formatter so that every verb, including %q and %x,
// prints the redaction marker.
func (Secret) Format(f fmt.State, verb rune) {
	if verb == 'q' {
		_, _ = io.WriteString(f, `"`+redacted+`"`)
		return
	}
	_, _ = io.WriteString(f, redacted)
}

// MarshalJSON implements json.Marshaler.
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

// MarshalText implements encoding.TextMarshaler.
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// LogValue implements slog.LogValuer.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// Credential is what an HTTP client attaches to each request of an
// operation.
type Credential struct {
	// Header is the header to send the value in. "" means
	// "Authorization: Bearer <value>"; any other name carries the value as is.
	Header string
	// Value is the secret itself.
	Value Secret
	// Expires, when non-zero, is checked before every leg: an expired
	// credential is never sent.
	Expires time.Time
}
