// Package safeurl reduces an endpoint URL to the part that may be shown in
// status, Events, logs, errors and command output.
//
// Some providers issue URLs that are themselves credentials: a token in the
// query, or an opaque secret as a path segment. No rule can tell such a path
// segment from an ordinary one, so the shown form keeps only the scheme, the
// host and the port, which identify the server without revealing how it is
// addressed. Anything more specific a person needs is in the object that
// declared the URL.
package safeurl

import (
	"net/url"
	"strings"
)

// Invalid is shown in place of a URL that does not parse.
const Invalid = "<invalid URL>"

// Display returns raw reduced to scheme://host[:port]/. User information,
// path, query and fragment are dropped; a URL without a scheme or host is
// shown as Invalid, never echoed.
func Display(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Scheme == "" || u.Host == "" || u.Opaque != "" {
		return Invalid
	}
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + "/"
}
