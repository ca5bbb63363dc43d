package gateway

import (
	"container/list"
	"net"
	"net/http"
	"sync"
)

// DefaultMaxIdleConnections bounds the idle connections a replica keeps
// open: net/http holds a goroutine and a read and a write buffer for each
// (about 18 KiB), for as long as the connection is open.
const DefaultMaxIdleConnections = 1024

// idleConns keeps at most max connections idle between requests: past
// that, the one idle longest is closed. A client whose idle connection
// was closed opens a new one for its next request, as it does after the
// server's idle timeout; a connection serving a request is never closed
// here. Sessions do not live on connections (the gateway is stateless), so
// nothing but the connection is lost, and an idle agent costs nothing.
type idleConns struct {
	max int

	mu   sync.Mutex
	lru  *list.List // of net.Conn, the one idle longest at the back
	idle map[net.Conn]*list.Element
}

func newIdleConns(max int) *idleConns {
	if max <= 0 {
		max = DefaultMaxIdleConnections
	}
	return &idleConns{max: max, lru: list.New(), idle: map[net.Conn]*list.Element{}}
}

// track is an http.Server's ConnState.
func (c *idleConns) track(conn net.Conn, state http.ConnState) {
	var evict net.Conn
	c.mu.Lock()
	if e, ok := c.idle[conn]; ok {
		c.lru.Remove(e)
		delete(c.idle, conn)
	}
	if state == http.StateIdle {
		c.idle[conn] = c.lru.PushFront(conn)
		if c.lru.Len() > c.max {
			back := c.lru.Back()
			evict = back.Value.(net.Conn)
			c.lru.Remove(back)
			delete(c.idle, evict)
		}
	}
	c.mu.Unlock()
	if evict != nil {
		// Its serving goroutine, waiting for the next request, sees the
		// close and ends; the server then reports it StateClosed.
		_ = evict.Close()
	}
}

// len is how many connections are idle now.
func (c *idleConns) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}
