package audit

import (
	"encoding/json"
	"strconv"
	"time"
	"unicode/utf8"
)

// appendRecord appends r encoded as encoding/json encodes it, byte for byte
// (TestAppendRecordMatchesEncodingJSON, FuzzAppendRecord), without
// reflection: two records per call made encoding/json's reflection the
// audit stage's largest cost. A value it does not write by itself (a
// string needing escapes, a time RFC 3339 cannot hold) goes through
// encoding/json.
func appendRecord(b []byte, r *Record) ([]byte, error) {
	if _, offset := r.Time.Zone(); r.Time.Year() < 0 || r.Time.Year() > 9999 || offset%60 != 0 || offset <= -24*3600 || offset >= 24*3600 {
		// A copy, so that only this rare branch puts a record on the heap:
		// handing r itself to the encoder would make every caller's record
		// escape.
		odd := *r
		enc, err := json.Marshal(&odd)
		return append(b, enc...), err
	}
	b = append(b, `{"time":"`...)
	b = r.Time.AppendFormat(b, time.RFC3339Nano)
	b = append(b, '"')
	b = appendMember(b, "callID", r.CallID, false)
	b = appendMember(b, "phase", r.Phase, false)
	b = appendMember(b, "caller", r.Caller, false)
	b = appendMember(b, "namespace", r.Namespace, false)
	b = appendMember(b, "tool", r.Tool, false)
	b = appendMember(b, "localName", r.LocalName, false)
	b = appendMember(b, "server", r.Server, false)
	b = appendMember(b, "serverNamespace", r.ServerNamespace, true)
	b = appendMember(b, "sharedServer", r.SharedServer, true)
	b = appendMember(b, "dataClass", r.DataClass, false)
	b = appendMember(b, "approval", r.Approval, true)
	b = appendMember(b, "approvalName", r.ApprovalName, true)
	b = appendMember(b, "approvedBy", r.ApprovedBy, true)
	b = appendMember(b, "decision", r.Decision, false)
	b = appendMember(b, "reason", r.Reason, true)
	b = appendMember(b, "detail", r.Detail, true)
	b = appendMember(b, "outcome", r.Outcome, true)
	b = appendMember(b, "errorKind", r.ErrorKind, true)
	if r.LatencyMillis != 0 {
		b = append(b, `,"latencyMillis":`...)
		b = strconv.AppendInt(b, r.LatencyMillis, 10)
	}
	b = appendMember(b, "argumentsHash", r.ArgumentsHash, true)
	if len(r.Inspection) > 0 {
		b = append(b, `,"inspection":[`...)
		for i, f := range r.Inspection {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f)
		}
		b = append(b, ']')
	}
	b = appendMember(b, "inspectionAction", r.InspectionAction, true)
	b = appendMember(b, "guardrail", r.Guardrail, true)
	b = appendMember(b, "writeDown", r.WriteDown, true)
	b = appendMember(b, "markClass", r.MarkClass, true)
	b = appendMember(b, "markTool", r.MarkTool, true)
	b = appendMember(b, "markReadAt", r.MarkReadAt, true)
	b = appendMember(b, "interaction", r.Interaction, true)
	b = appendMember(b, "interactionMode", r.InteractionMode, true)
	b = appendMember(b, "interactionResult", r.InteractionResult, true)
	if r.Repeated != 0 {
		b = append(b, `,"repeated":`...)
		b = strconv.AppendInt(b, int64(r.Repeated), 10)
	}
	b = appendMember(b, "method", r.Method, true)
	return append(b, '}'), nil
}

// appendMember appends ,"name":"value", leaving it out when omitEmpty and
// value is empty.
func appendMember(b []byte, name, value string, omitEmpty bool) []byte {
	if omitEmpty && value == "" {
		return b
	}
	b = append(b, ',', '"')
	b = append(b, name...)
	b = append(b, '"', ':')
	return appendJSONString(b, value)
}

// appendJSONString appends s quoted as encoding/json quotes it: plain
// printable ASCII as it is, anything else (quotes, backslashes, control
// characters, the characters it escapes for HTML, non-ASCII) through
// encoding/json.
func appendJSONString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= utf8.RuneSelf || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always encodes
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
