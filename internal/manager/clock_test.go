package manager

import (
	"testing"
	"time"

	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// The gateway reads GatewayClock, else the deprecated GatewayNow, else
// the real clock.
func TestGatewayClock(t *testing.T) {
	t0 := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	fake := testingclock.NewFakePassiveClock(t0)
	now := func() time.Time { return t0.Add(time.Hour) }
	if got := (Options{GatewayClock: fake, GatewayNow: now}).gatewayClock().Now(); !got.Equal(t0) {
		t.Errorf("with both set: %v, want GatewayClock's %v", got, t0)
	}
	if got := (Options{GatewayNow: now}).gatewayClock(); !got.Now().Equal(t0.Add(time.Hour)) || got.Since(t0) != time.Hour {
		t.Errorf("with GatewayNow: %v, want GatewayNow's %v", got.Now(), t0.Add(time.Hour))
	}
	if _, ok := (Options{}).gatewayClock().(clock.RealClock); !ok {
		t.Error("with neither set, not the real clock")
	}
}
