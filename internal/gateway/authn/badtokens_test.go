package authn

import (
	"fmt"
	"testing"
	"time"
)

func TestTheBadTokenTableIsBounded(t *testing.T) {
	b := newBadTokens(1, 1, time.Minute)
	b.max = 50
	now := time.Unix(1_800_000_000, 0)
	for i := range 1000 {
		b.failed(b.fingerprint(fmt.Sprintf("bad-%d", i)), now)
	}
	if n := b.len(); n > 50 {
		t.Fatalf("%d bad tokens remembered, bound 50", n)
	}
	// The newest is remembered: the table evicts others to make room.
	if !b.knownBad(b.fingerprint("bad-999"), now) {
		t.Error("the newest bad token was not remembered")
	}
}
