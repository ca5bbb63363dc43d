package oauthresource

import (
	"encoding/json"
	"strings"
	"time"
)

// ExtraIssuer is the key of Identity.Extra naming the issuer that vouched
// for the identity, for SubjectAccessReview and audit.
const ExtraIssuer = "oauth.mcp.catalog.dev/issuer"

// Identity is an authenticated person or client, as the API server would
// name it with the same OIDC options: Username, UID, Groups and Extra are
// a Kubernetes user.Info (it implements the interface), ready for a
// SubjectAccessReview. The rest is what the token said besides.
//
// An Identity returned by Validate may be shared with other callers of
// the same token: do not modify it.
type Identity struct {
	Username string
	UID      string
	Groups   []string
	Extra    map[string][]string

	// Issuer and Subject are the token's iss and sub.
	Issuer, Subject string
	// ClientID is the OAuth client the token was issued to (client_id,
	// else azp), when the token says.
	ClientID string
	// Scopes are the granted scopes (scope, or scp as a list).
	Scopes []string
	// Expiry is the token's exp.
	Expiry time.Time
}

// GetName, GetUID, GetGroups and GetExtra implement Kubernetes'
// user.Info.
func (i *Identity) GetName() string               { return i.Username }
func (i *Identity) GetUID() string                { return i.UID }
func (i *Identity) GetGroups() []string           { return i.Groups }
func (i *Identity) GetExtra() map[string][]string { return i.Extra }

// MissingScopes lists the scopes of required the token was not granted,
// in order, for an insufficient_scope answer; none when it has them all.
func (i *Identity) MissingScopes(required []string) []string {
	var missing []string
	for _, s := range required {
		found := false
		for _, g := range i.Scopes {
			if g == s {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, s)
		}
	}
	return missing
}

// claimSet is a verified token's claims, by name.
type claimSet map[string]json.RawMessage

// str reads a string claim; ok is false when absent, null or not a string.
func (c claimSet) str(name string) (string, bool) {
	raw, present := c[name]
	if !present {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// strings reads a claim that is a string or a list of strings; a
// space-separated string is split when split is set (the scope claim).
func (c claimSet) strings(name string, split bool) ([]string, bool) {
	raw, present := c[name]
	if !present || string(raw) == "null" {
		return nil, true
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if split {
			return strings.Fields(one), true
		}
		if one == "" {
			return nil, true
		}
		return []string{one}, true
	}
	var many []string
	if json.Unmarshal(raw, &many) != nil {
		return nil, false
	}
	return many, true
}

// identity maps verified claims onto a Kubernetes identity, as the API
// server's OIDC options do, and refuses what it cannot map or what would
// land in the system: namespace.
func (is *issuer) identity(c claimSet, subject string, expiry time.Time) (*Identity, error) {
	m := is.cfg.ClaimMappings
	userClaim := m.Username.Claim
	if userClaim == "" {
		userClaim = "sub"
	}
	name, ok := c.str(userClaim)
	if !ok || name == "" {
		return nil, refused(ReasonClaims, is.cfg.URL, "the username claim %s is missing or not a string", quote(userClaim))
	}
	if userClaim == "email" {
		if raw, present := c["email_verified"]; present {
			var verified bool
			if json.Unmarshal(raw, &verified) != nil || !verified {
				return nil, refused(ReasonClaims, is.cfg.URL, "the email is not verified (email_verified)")
			}
		}
	}
	prefix := is.cfg.URL + "#"
	if p := m.Username.Prefix; p != nil {
		prefix = *p
	} else if userClaim == "email" {
		prefix = ""
	}
	id := &Identity{
		Username: prefix + name,
		Issuer:   is.cfg.URL,
		Subject:  subject,
		Expiry:   expiry,
		Extra:    map[string][]string{ExtraIssuer: {is.cfg.URL}},
	}
	if strings.HasPrefix(id.Username, reservedPrefix) {
		return nil, refused(ReasonClaims, is.cfg.URL, "the username would be in the reserved %s namespace", reservedPrefix)
	}
	if m.Groups.Claim != "" {
		groups, ok := c.strings(m.Groups.Claim, false)
		if !ok {
			return nil, refused(ReasonClaims, is.cfg.URL, "the groups claim %s is neither a string nor a list of strings", quote(m.Groups.Claim))
		}
		for _, g := range groups {
			if g == "" {
				continue
			}
			g = *m.Groups.Prefix + g
			if strings.HasPrefix(g, reservedPrefix) {
				return nil, refused(ReasonClaims, is.cfg.URL, "a group would be in the reserved %s namespace; configure a groups prefix", reservedPrefix)
			}
			id.Groups = append(id.Groups, g)
		}
	}
	uidClaim := m.UID.Claim
	if uidClaim == "" {
		uidClaim = "sub"
	}
	if id.UID, ok = c.str(uidClaim); !ok {
		return nil, refused(ReasonClaims, is.cfg.URL, "the uid claim %s is missing or not a string", quote(uidClaim))
	}
	if id.ClientID, _ = c.str("client_id"); id.ClientID == "" {
		id.ClientID, _ = c.str("azp")
	}
	if _, present := c["scope"]; present {
		id.Scopes, _ = c.strings("scope", true)
	} else {
		id.Scopes, _ = c.strings("scp", true)
	}
	return id, nil
}

// MapClaims is the identity verified claims (a JSON object whose
// signature, issuer, audience and expiry the caller has checked, such as
// an ID token go-oidc verified) stand for under is's claim mappings: the
// same name an access token with these claims would be given.
func (is Issuer) MapClaims(claims []byte) (*Identity, error) {
	var c claimSet
	if err := json.Unmarshal(claims, &c); err != nil {
		return nil, refused(ReasonClaims, is.URL, "the claims are not a JSON object")
	}
	sub, ok := c.str("sub")
	if !ok || sub == "" {
		return nil, refused(ReasonClaims, is.URL, "the claims have no sub")
	}
	return (&issuer{cfg: is}).identity(c, sub, time.Time{})
}
