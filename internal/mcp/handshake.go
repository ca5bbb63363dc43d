package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"unicode/utf8"
)

// Bounds on what a server may say about itself; longer text is cut (it is
// display text, not protocol data).
const (
	maxInfoBytes         = 256
	maxInstructionsBytes = 16 << 10
	maxCapabilityNames   = 64
	maxSessionIDBytes    = 1024
)

// connect establishes the operation's era and version. needInfo asks for the
// server's self-description, which in the modern era costs a server/discover
// leg; a legacy handshake always yields it.
//
// A remembered era is tried first. If it fails in a way that says the era
// is wrong, it is forgotten and detected afresh, once.
func (o *operation) connect(ctx context.Context, needInfo bool) error {
	if entry, ok := o.c.eras.get(o.origin, o.c.now()); ok {
		o.eraFromCache = true
		err := o.connectCached(ctx, entry, needInfo)
		if err == nil || !o.staleCache(entry, err) {
			return err
		}
		o.c.eras.forget(o.origin)
		o.eraFromCache = false
		o.end(ctx) // a session the failed attempt opened is not left behind
		o.session, o.version, o.era = "", "", eraUnknown
	}
	return o.detect(ctx, needInfo)
}

func (o *operation) connectCached(ctx context.Context, entry eraEntry, needInfo bool) error {
	if entry.era == eraLegacy {
		return o.initialize(ctx, entry.version)
	}
	o.era, o.version = eraModern, entry.version
	if !needInfo {
		o.probe.ProtocolVersion = entry.version
		return nil
	}
	info, err := o.discover(ctx, entry.version)
	if err != nil {
		return err
	}
	if !slices.Contains(info.supported, entry.version) {
		return o.failDetail(KindUnsupportedVersion, "server/discover", "remembered version no longer supported")
	}
	o.setModern(entry.version, info)
	return nil
}

// staleCache reports whether err, from an operation that trusted the era
// cache, says the remembered era or version is wrong.
func (o *operation) staleCache(entry eraEntry, err error) bool {
	var e *Error
	if !errors.As(err, &e) {
		return false
	}
	if entry.era == eraModern {
		return e.Kind == KindUnsupportedVersion || staleModern(err)
	}
	// Legacy: the server no longer takes initialize (a modern-only server
	// answers it with a 4xx or a JSON-RPC error), or no longer takes the
	// remembered version.
	switch e.Kind {
	case KindUnsupportedVersion, KindRPCError:
		return true
	}
	s := e.StatusCode
	return s >= 400 && s <= 499 && s != http.StatusUnauthorized && s != http.StatusForbidden &&
		s != http.StatusProxyAuthRequired && s != http.StatusTooManyRequests
}

// detect finds the server's era per the 2026-07-28 dual-era rules for
// Streamable HTTP: a modern request first (server/discover, which has no side
// effects, so a tools/call is never the probe); a recognised modern error
// means modern, UnsupportedProtocolVersionError picks a mutually supported
// version from its list; a 4xx (or a JSON-RPC error) without a recognised
// modern error, or a success that is not a discovery result, means legacy
// and initialize follows. Every outcome that
// identifies the era is remembered for the origin.
func (o *operation) detect(ctx context.Context, needInfo bool) error {
	tried := map[string]bool{}
	version := modernVersions[0]
	// Each round either finishes or consumes a version not tried before, so
	// the loop is bounded by the number of versions this client speaks.
	for range len(modernVersions) + len(legacyVersions) + 1 {
		if eraOfVersion(version) == eraLegacy {
			if err := o.initialize(ctx, version); err != nil {
				return err
			}
			// Remembered only when detected, never refreshed by use: the
			// TTL is what makes an upgraded server be noticed.
			o.c.eras.put(o.origin, eraLegacy, o.version, o.c.now())
			return nil
		}
		tried[version] = true
		info, err := o.discover(ctx, version)
		if err == nil {
			if slices.Contains(info.supported, version) {
				o.setModern(version, info)
				o.c.eras.put(o.origin, eraModern, version, o.c.now())
				return nil
			}
			next, ok := pickVersion(info.supported, tried)
			if !ok {
				return o.failDetail(KindUnsupportedVersion, "server/discover", "no supported version in common")
			}
			version = next
			continue
		}
		var e *Error
		if !errors.As(err, &e) {
			return err
		}
		switch {
		case e.RPCCode == codeUnsupportedProtocolVersion:
			next, ok := pickVersion(supportedFromErrorData(e.RPCData), tried)
			if !ok {
				e.Kind = KindUnsupportedVersion
				return e
			}
			version = next
		case isModernErrorCode(e.RPCCode):
			// A modern server refused the request itself (header mismatch,
			// missing capability): report it, do not fall back.
			return err
		case legacySignal(e):
			version = legacyVersions[0]
		default:
			return err
		}
	}
	return o.failDetail(KindUnsupportedVersion, "server/discover", "version negotiation did not settle")
}

// errNotDiscoverResult marks a server/discover success whose result is not a
// discovery result; detection reads it as the sign of a legacy server.
var errNotDiscoverResult = errors.New("result is not a discovery result")

// supportedFromErrorData reads data.supported of an
// UnsupportedProtocolVersionError.
func supportedFromErrorData(data json.RawMessage) []string {
	var d struct {
		Supported []string `json:"supported"`
	}
	if json.Unmarshal(data, &d) != nil {
		return nil
	}
	return d.Supported
}

// setModern records a modern handshake's outcome.
func (o *operation) setModern(version string, info *serverSelf) {
	o.era, o.version = eraModern, version
	o.probe = ProbeResult{
		Server:           info.server,
		ProtocolVersion:  version,
		Capabilities:     info.capabilities,
		ToolsListChanged: info.listChanged,
		Instructions:     info.instructions,
		Latency:          o.budget.elapsed(),
	}
}

// serverSelf is what a discover or initialize result says about the server.
type serverSelf struct {
	supported    []string // discover only
	version      string   // initialize only
	server       ServerInfo
	capabilities []string
	listChanged  bool
	instructions string
}

// discover sends server/discover in the modern era with the given version.
func (o *operation) discover(ctx context.Context, version string) (*serverSelf, error) {
	o.era, o.version = eraModern, version
	l := o.workLeg("server/discover", nil)
	msg, err := o.answerMessage(ctx, l)
	if err != nil {
		return nil, err
	}
	// Everything kept from the result is copied out of it.
	defer msg.release()
	result := msg.result
	// Only a result naming supportedVersions is a discovery result. Any other
	// result object ({} from a server that answers every unknown method
	// leniently) is not a recognised modern answer, so under the 2026-07-28
	// backward-compatibility rules it identifies a legacy server. (A result
	// that is not an object at all was refused earlier, as for every method.)
	m, err := decodeObject(result)
	if sv, ok := m["supportedVersions"]; err != nil || !ok || isJSONNull(sv) {
		return nil, &Error{Kind: KindInvalidResponse, Server: o.ep.Name, Method: l.method,
			Detail: "result is not a discovery result", Err: errNotDiscoverResult}
	}
	if err := o.checkResultType(l.method, msg.tape, msg.resultAt); err != nil {
		return nil, err
	}
	self := &serverSelf{}
	if json.Unmarshal(m["supportedVersions"], &self.supported) != nil {
		return nil, o.failDetail(KindInvalidResponse, l.method, "supportedVersions is not a list of strings")
	}
	if err := o.readSelf(l.method, m, self); err != nil {
		return nil, err
	}
	if meta, ok := m["_meta"]; ok && !isJSONNull(meta) {
		mm, err := decodeObject(meta)
		if err != nil {
			return nil, o.failDetail(KindInvalidResponse, l.method, "_meta is not an object")
		}
		if si, ok := mm["io.modelcontextprotocol/serverInfo"]; ok {
			if self.server, err = parseServerInfo(si); err != nil {
				return nil, o.failDetail(KindInvalidResponse, l.method, "serverInfo is malformed")
			}
		}
	}
	return self, nil
}

// initialize performs the legacy handshake: initialize with the
// capabilities this client declares (clientCapabilities), then notifications/initialized, which the server must accept
// with a 2xx (202 per the specification). A session id the server issues is
// kept for every later leg and ended with DELETE by the operation.
func (o *operation) initialize(ctx context.Context, version string) error {
	o.era, o.version, o.session = eraLegacy, "", ""
	params := map[string]any{
		"protocolVersion": version,
		"capabilities":    clientCapabilities,
		"clientInfo":      map[string]string{"name": o.c.clientName, "version": o.c.clientVersion},
	}
	l := leg{method: "initialize", params: params}
	r, err := o.exchange(ctx, l)
	if err != nil {
		return err
	}
	if err := o.statusErr(l.method, r); err != nil {
		return err
	}
	if r.msg.err != nil {
		return o.rpcErr(l.method, r.status, r.msg.err)
	}
	// Everything kept from the result is copied out of it.
	defer r.msg.release()
	if sid := r.header.Get(headerSessionID); sid != "" {
		if !validSessionID(sid) {
			return o.failDetail(KindInvalidResponse, l.method, "session id is not visible ASCII within bounds")
		}
		// Kept before the result is checked, so the session is ended even
		// when the handshake is refused below.
		o.session = sid
	}
	m, err := decodeObject(r.msg.result)
	if err != nil {
		return o.failDetail(KindInvalidResponse, l.method, "result is malformed")
	}
	self := &serverSelf{}
	if json.Unmarshal(m["protocolVersion"], &self.version) != nil {
		return o.failDetail(KindInvalidResponse, l.method, "protocolVersion is not a string")
	}
	if eraOfVersion(self.version) != eraLegacy {
		return o.failDetail(KindUnsupportedVersion, l.method, "server chose a version this client does not speak")
	}
	if err := o.readSelf(l.method, m, self); err != nil {
		return err
	}
	if si, ok := m["serverInfo"]; ok {
		if self.server, err = parseServerInfo(si); err != nil {
			return o.failDetail(KindInvalidResponse, l.method, "serverInfo is malformed")
		}
	}
	o.version = self.version

	n, err := o.exchange(ctx, leg{method: "notifications/initialized", notify: true, version: o.version})
	if err != nil {
		return err
	}
	if err := o.statusErr("notifications/initialized", n); err != nil {
		return err
	}
	o.probe = ProbeResult{
		Server:           self.server,
		ProtocolVersion:  self.version,
		Capabilities:     self.capabilities,
		ToolsListChanged: self.listChanged,
		Instructions:     self.instructions,
		SessionIssued:    o.session != "",
		Latency:          o.budget.elapsed(),
	}
	return nil
}

// readSelf reads the capabilities and instructions members common to the
// discover and initialize results.
func (o *operation) readSelf(method string, m map[string]json.RawMessage, self *serverSelf) error {
	if raw, ok := m["capabilities"]; ok && !isJSONNull(raw) {
		caps, err := decodeObject(raw)
		if err != nil {
			return o.failDetail(KindInvalidResponse, method, "capabilities is not an object")
		}
		for name := range caps {
			if len(self.capabilities) < maxCapabilityNames && capabilityName(name) {
				self.capabilities = append(self.capabilities, name)
			}
		}
		slices.Sort(self.capabilities)
		// tools.listChanged is read leniently: anything but an object
		// holding true means the server promises no notifications.
		if tools, err := decodeObject(caps["tools"]); err == nil {
			var lc bool
			self.listChanged = json.Unmarshal(tools["listChanged"], &lc) == nil && lc
		}
	}
	if raw, ok := m["instructions"]; ok && !isJSONNull(raw) {
		if json.Unmarshal(raw, &self.instructions) != nil {
			return o.failDetail(KindInvalidResponse, method, "instructions is not a string")
		}
		self.instructions = truncateUTF8(self.instructions, maxInstructionsBytes)
	}
	return nil
}

func parseServerInfo(raw json.RawMessage) (ServerInfo, error) {
	var si ServerInfo
	if isJSONNull(raw) {
		return si, nil
	}
	m, err := decodeObject(raw)
	if err != nil {
		return si, err
	}
	for key, dst := range map[string]*string{"name": &si.Name, "title": &si.Title, "version": &si.Version} {
		v, ok := m[key]
		if !ok || isJSONNull(v) {
			continue
		}
		if err := json.Unmarshal(v, dst); err != nil {
			return ServerInfo{}, err
		}
		*dst = truncateUTF8(*dst, maxInfoBytes)
	}
	return si, nil
}

// capabilityName keeps capability names that are safe to show as is.
func capabilityName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !toolNameByte(s[i]) && s[i] != '/' {
			return false
		}
	}
	return true
}

// validSessionID: visible ASCII (0x21-0x7E) per the transport specification,
// bounded in length.
func validSessionID(s string) bool {
	if len(s) > maxSessionIDBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// truncateUTF8 cuts s to at most n bytes without splitting a character.
func truncateUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
