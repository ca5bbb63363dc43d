// Package tenancy holds what keeps one tenant (a namespace) of the shared
// controllers from exhausting what all tenants share: the administrator's
// caps on what one McpServer may ask for, the process-wide budget of
// catalog bytes in flight, and the bound on what one namespace may store.
// It decides; the McpServer controller acts on its answers and reports
// them as conditions. The fair sharing of workers is package fairqueue.
package tenancy

import (
	"fmt"
	"time"
)

// Caps are the administrator's ceilings on what one McpServer's spec may
// ask for. A zero field caps nothing.
type Caps struct {
	// MaxCatalogBytes caps spec.import.maxCatalogBytes.
	MaxCatalogBytes int64
	// MaxTools caps spec.import.maxTools.
	MaxTools int32
	// MaxOperationTimeout caps spec.operationTimeout.
	MaxOperationTimeout time.Duration
	// MinHealthInterval is the shortest spec.healthCheck.interval used.
	MinHealthInterval time.Duration
}

// Limits are what one server's imports and probes run under: its spec's
// values, defaults filled in, or the caps.
type Limits struct {
	MaxCatalogBytes  int64
	MaxTools         int32
	OperationTimeout time.Duration
	HealthInterval   time.Duration
}

// Capped is one spec field a cap overrode.
type Capped struct {
	// Field is the spec field's path, e.g. "spec.import.maxTools".
	Field string
	// Asked is what the spec asks for; Used what is used instead.
	Asked, Used string
}

func (c Capped) String() string {
	return fmt.Sprintf("%s asks for %s, the administrator allows %s", c.Field, c.Asked, c.Used)
}

// Apply returns the limits a server that asks for asked runs under, and
// every field a cap overrode, in a fixed order. A cap only ever makes an
// operation cheaper: budgets are lowered, the health interval raised.
func (c Caps) Apply(asked Limits) (Limits, []Capped) {
	used := asked
	var capped []Capped
	if c.MaxCatalogBytes > 0 && asked.MaxCatalogBytes > c.MaxCatalogBytes {
		used.MaxCatalogBytes = c.MaxCatalogBytes
		capped = append(capped, Capped{"spec.import.maxCatalogBytes", fmt.Sprint(asked.MaxCatalogBytes), fmt.Sprint(c.MaxCatalogBytes)})
	}
	if c.MaxTools > 0 && asked.MaxTools > c.MaxTools {
		used.MaxTools = c.MaxTools
		capped = append(capped, Capped{"spec.import.maxTools", fmt.Sprint(asked.MaxTools), fmt.Sprint(c.MaxTools)})
	}
	if c.MaxOperationTimeout > 0 && asked.OperationTimeout > c.MaxOperationTimeout {
		used.OperationTimeout = c.MaxOperationTimeout
		capped = append(capped, Capped{"spec.operationTimeout", asked.OperationTimeout.String(), c.MaxOperationTimeout.String()})
	}
	if c.MinHealthInterval > 0 && asked.HealthInterval < c.MinHealthInterval {
		used.HealthInterval = c.MinHealthInterval
		capped = append(capped, Capped{"spec.healthCheck.interval", asked.HealthInterval.String(), c.MinHealthInterval.String()})
	}
	return used, capped
}
