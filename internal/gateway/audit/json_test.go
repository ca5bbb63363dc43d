package audit

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

// recordFrom builds a record whose every string member is taken from
// strs in turn, so that a test or fuzzer chooses each one's bytes.
func recordFrom(strs []string, t time.Time, latency int64, repeated int) Record {
	next := func(i int) string { return strs[i%len(strs)] }
	return Record{
		Time: t, CallID: next(0), Phase: next(1), Caller: next(2), Namespace: next(3), Tool: next(4),
		LocalName: next(5), Server: next(6), ServerNamespace: next(7), SharedServer: next(8), DataClass: next(9),
		Approval: next(10), ApprovalName: next(11), ApprovedBy: next(12), Decision: next(13), Reason: next(14),
		Detail: next(15), Outcome: next(16), ErrorKind: next(17), LatencyMillis: latency, ArgumentsHash: next(18),
		Repeated: repeated, Method: next(19),
	}
}

func sameAsEncodingJSON(t *testing.T, r Record) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := appendRecord(nil, &r)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("error %v, encoding/json's %v", err, wantErr)
	}
	if err == nil && string(got) != string(want) {
		t.Fatalf("record %#v\n got: %s\nwant: %s", r, got, want)
	}
}

func TestAppendRecordMatchesEncodingJSON(t *testing.T) {
	strs := []string{
		"", "x", "system:serviceaccount:team-a:agent", "mcp_docs_search", "Allowed", "sha256:0f",
		`quote " and \ backslash`, "<script>&amp;</script>", "a<b", "a>b", "a&b", "a\"b", "a\\b", "a\u007fb", "a\u0080b", "tab\tnewline\n", "\x00\x1f\x7f",
		"héllo wörld", "日本語", "\u2028\u2029", "bad utf-8 \xff\xfe", "emoji 🙂",
	}
	zones := []*time.Location{time.UTC, time.FixedZone("plus", 5*3600+30*60), time.FixedZone("seconds", 3600+7), time.FixedZone("far", 25*3600)}
	times := []time.Time{
		{}, time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC), time.Date(2026, 12, 2, 9, 0, 0, 123456789, time.UTC),
		time.Date(2026, 12, 2, 9, 0, 0, 120000000, time.UTC), time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 5000 {
		pick := make([]string, 20)
		for j := range pick {
			pick[j] = strs[rng.IntN(len(strs))]
		}
		tm := times[i%len(times)].In(zones[rng.IntN(len(zones))])
		sameAsEncodingJSON(t, recordFrom(pick, tm, rng.Int64N(3)-1, rng.IntN(3)-1))
	}
}

func FuzzAppendRecord(f *testing.F) {
	f.Add("callid", "team-a", `a "quoted" <name>`, int64(12), 3, int64(1764666000), 5)
	f.Add("", "", "\xff", int64(0), 0, int64(-62135596800), 0)
	f.Fuzz(func(t *testing.T, a, b, c string, latency int64, repeated int, unix int64, offsetMinutes int) {
		tm := time.Unix(unix, int64(repeated)).In(time.FixedZone("z", offsetMinutes*60))
		sameAsEncodingJSON(t, recordFrom([]string{a, b, c, "", a + c}, tm, latency, repeated))
	})
}

// TestAppendRecordWritesEveryField fills every field of a Record by
// reflection, so that a field added to Record and not to appendRecord
// fails here rather than going missing from the audit trail.
func TestAppendRecordWritesEveryField(t *testing.T) {
	var r Record
	v := reflect.ValueOf(&r).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.String:
			f.SetString("value-of-" + v.Type().Field(i).Name)
		case reflect.Int, reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Slice:
			f.Set(reflect.ValueOf([]string{"value-of-" + v.Type().Field(i).Name, "<second>"}))
		case reflect.Struct:
			f.Set(reflect.ValueOf(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)))
		default:
			t.Fatalf("Record.%s is a %s, which this test does not fill", v.Type().Field(i).Name, f.Kind())
		}
	}
	sameAsEncodingJSON(t, r)
}
