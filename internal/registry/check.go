package registry

import (
	"errors"
	"fmt"
	"regexp"
)

// namePattern is the API's rule for a server name (ServerDetail.name).
var namePattern = regexp.MustCompile(`^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$`)

// ValidName says whether s is a server name the API allows.
func ValidName(s string) bool {
	return len(s) >= 3 && len(s) <= maxNameBytes && namePattern.MatchString(s)
}

// checkList checks what this package relies on in every entry of a list.
func checkList(l *ServerList) error {
	if l.Servers == nil {
		return errors.New(`the answer has no "servers" array`)
	}
	for i := range l.Servers {
		if err := checkServer(&l.Servers[i]); err != nil {
			return fmt.Errorf("server %d: %w", i, err)
		}
	}
	if l.Metadata != nil && len(l.Metadata.NextCursor) > maxCursorBytes {
		return fmt.Errorf("the next cursor is longer than %d bytes", maxCursorBytes)
	}
	return nil
}

// checkServer checks the name and version, which end up in request paths
// and on Kubernetes objects. The rest is shown or mapped with its own
// checks.
func checkServer(r *ServerResponse) error {
	switch {
	case !ValidName(r.Server.Name):
		return errors.New("the name is not a reverse-DNS server name (namespace/name, at most 200 characters)")
	case checkPathValue(r.Server.Version, maxVersionBytes) != nil:
		return fmt.Errorf("the version is empty, longer than %d bytes or holds a space", maxVersionBytes)
	}
	switch r.Status() {
	case StatusActive, StatusDeprecated, StatusDeleted:
	default:
		return errors.New("the status is not active, deprecated or deleted")
	}
	return nil
}
