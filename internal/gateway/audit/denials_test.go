package audit

import (
	"fmt"
	"testing"
	"time"
)

// The table of open windows is bounded; a denial without room is written.
func TestTheDenialTableIsBounded(t *testing.T) {
	d := NewDenials(time.Minute)
	d.max = 20
	now := time.Unix(1_800_000_000, 0)
	for i := range 100 {
		if write, _, _ := d.Admit(Record{Caller: fmt.Sprintf("c%d", i), Reason: DenyForbidden}, now); !write {
			t.Fatalf("the first denial of caller %d was not written", i)
		}
	}
	if len(d.open) > 20 {
		t.Errorf("%d open windows, bound 20", len(d.open))
	}
}
