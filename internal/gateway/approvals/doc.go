// Package approvals holds what a person's approval of a call rests on:
// the keys every replica signs with, the signed approval state an agent's
// client carries and spends once, the seal on each McpCallApproval the
// gateway writes, the guard that the admission policy keeping callers from
// deciding their own approvals is in force, and the sweeper of expired
// approvals.
package approvals

import "k8s.io/utils/clock"

// clockOr is c, or the real clock when c is nil (a clock a test did not
// set).
func clockOr(c clock.PassiveClock) clock.PassiveClock {
	if c == nil {
		return clock.RealClock{}
	}
	return c
}
