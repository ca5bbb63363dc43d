package approvals

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// An administrator revokes the approval key by deleting its Secret (or
// emptying it): a replica that cached the key must stop verifying what
// was signed with it, not keep it as if the API had only hiccupped.
func TestADeletedKeySecretRevokesTheKeysAReplicaCached(t *testing.T) {
	name := types.NamespacedName{Namespace: "ops", Name: "approval-key"}
	secret := func() *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: name.Namespace, Name: name.Name},
			Data: map[string][]byte{SecretKeyCurrent: []byte(strings.Repeat("k", 32))}}
	}
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, deleteIt := range []bool{true, false} {
		c := fake.NewClientBuilder().WithObjects(secret()).Build()
		clk := testingclock.NewFakePassiveClock(now)
		keys := &SecretKeys{Reader: c, Secret: name, TTL: time.Minute, Clock: clk}
		a := Approver{keys: keys}
		s := sampleState()
		s.Expires = now.Add(StateWindow).Unix()
		token, err := a.Sign(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		if err := a.Verify(ctx, token, s, now); err != nil {
			t.Fatalf("before the revocation: %v", err)
		}
		if deleteIt {
			if err := c.Delete(ctx, secret()); err != nil {
				t.Fatal(err)
			}
		} else {
			emptied := secret()
			emptied.Data = map[string][]byte{}
			if err := c.Update(ctx, emptied); err != nil {
				t.Fatal(err)
			}
		}
		now = now.Add(time.Minute + time.Second)
		clk.SetTime(now)
		if err := a.Verify(ctx, token, s, now); err == nil {
			t.Errorf("deleted %t: a state signed with the revoked key still verifies", deleteIt)
		}
		if _, err := a.Sign(ctx, s); err == nil {
			t.Errorf("deleted %t: the replica still signs with the revoked key", deleteIt)
		}
	}
}
