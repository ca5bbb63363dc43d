package gateway

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
)

// arguments decodes the call's arguments and hashes their canonical form.
func arguments(raw any) (map[string]any, string, error) {
	var m map[string]any
	switch v := raw.(type) {
	case nil:
		m = map[string]any{}
	case json.RawMessage:
		if len(v) == 0 || string(v) == "null" {
			m = map[string]any{}
		} else if err := decodeObject(v, &m); err != nil || m == nil {
			return nil, "", errors.New("arguments are not an object")
		}
	case map[string]any:
		m = v
	default:
		b, err := json.Marshal(v)
		if err != nil || decodeObject(b, &m) != nil || m == nil {
			return nil, "", errors.New("arguments are not an object")
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, "", err
	}
	sum := sha256.Sum256(b)
	return m, "sha256:" + hex.EncodeToString(sum[:]), nil
}

// decodeObject decodes a JSON object keeping numbers as written
// (json.Number): a float64 would change an integer id above 2^53 on its way
// upstream.
func decodeObject(b []byte, m *map[string]any) error {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(m); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data after the arguments")
	}
	return nil
}
