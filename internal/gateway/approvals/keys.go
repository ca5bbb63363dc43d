package approvals

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// KeySet is the key that signs approval state and approval seals, and the
// key that signed them before a rotation. Verification accepts both, so
// rotating does not refuse an approval signed just before it.
type KeySet struct {
	Current  []byte
	Previous []byte
}

// KeySource supplies the KeySet. fresh asks for the keys as stored now,
// not as cached: a verification that failed with the cached keys asks
// again once, in case another replica already signs with a new key.
type KeySource interface {
	Keys(ctx context.Context, fresh bool) (KeySet, error)
}

// StaticKeys is a KeySource that never changes: one process's random key
// in development, or fixed keys in tests.
type StaticKeys KeySet

// Keys implements KeySource.
func (s StaticKeys) Keys(context.Context, bool) (KeySet, error) { return KeySet(s), nil }

// Secret keys are read from these keys of the Secret's data.
const (
	SecretKeyCurrent  = "current"
	SecretKeyPrevious = "previous"
)

// minKeyLength is the shortest signing key accepted from a Secret.
const minKeyLength = 32

// ErrBadKeySecret is returned when the key Secret is missing or holds no
// usable current key. Its message never holds key material.
var ErrBadKeySecret = errors.New("the approval key Secret is missing or has no current key of at least 32 bytes")

// SecretKeys reads the KeySet from a Secret shared by every gateway
// replica, and caches it for TTL (default one minute). To rotate, move
// current to previous and write a new current; keep previous for at least
// the approval window plus TTL. Deleting the Secret (or its current key)
// revokes the keys: each replica stops signing and verifying with them
// within TTL.
type SecretKeys struct {
	Reader client.Reader
	Secret types.NamespacedName
	TTL    time.Duration
	// Clock is the clock expiry is judged by; nil is the real one.
	Clock clock.PassiveClock

	mu      sync.Mutex
	keys    KeySet
	fetched time.Time
}

// Keys implements KeySource.
func (s *SecretKeys) Keys(ctx context.Context, fresh bool) (KeySet, error) {
	now := clockOr(s.Clock).Now()
	ttl := s.TTL
	if ttl <= 0 {
		ttl = time.Minute
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	// A fresh read is still rate-limited, so that forged state cannot make
	// every request a read of the Secret. A clock that went backwards
	// makes the cache stale rather than fresh for longer.
	age := now.Sub(s.fetched)
	if s.keys.Current != nil && age >= 0 && (age < ttl && !fresh || age < time.Second) {
		return s.keys, nil
	}
	var sec corev1.Secret
	if err := s.Reader.Get(ctx, s.Secret, &sec); err != nil {
		if s.keys.Current != nil && !apierrors.IsNotFound(err) {
			// A passing API hiccup keeps the keys already known.
			return s.keys, nil
		}
		// A deleted Secret revokes its keys: nothing signed or sealed
		// with them verifies any more, on any replica, once its cache
		// expires.
		s.keys = KeySet{}
		return KeySet{}, fmt.Errorf("%w: %s: %w", ErrBadKeySecret, s.Secret, err)
	}
	cur := sec.Data[SecretKeyCurrent]
	if len(cur) < minKeyLength {
		// So does a Secret emptied of its current key.
		s.keys = KeySet{}
		return KeySet{}, fmt.Errorf("%w: %s", ErrBadKeySecret, s.Secret)
	}
	s.keys = KeySet{Current: cur, Previous: sec.Data[SecretKeyPrevious]}
	s.fetched = now
	return s.keys, nil
}

// mac is HMAC-SHA256 of b under key.
func MAC(key, b []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write(b)
	return m.Sum(nil)
}

// VerifyMAC checks sig against b under the current or the previous key,
// reading the keys again once when the cached ones do not match.
func VerifyMAC(ctx context.Context, src KeySource, b, sig []byte) (bool, error) {
	for _, fresh := range []bool{false, true} {
		ks, err := src.Keys(ctx, fresh)
		if err != nil {
			return false, err
		}
		for _, k := range [][]byte{ks.Current, ks.Previous} {
			if len(k) > 0 && hmac.Equal(MAC(k, b), sig) {
				return true, nil
			}
		}
	}
	return false, nil
}
