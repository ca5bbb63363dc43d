package tsagent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Everything is the TypeScript reference server
// (@modelcontextprotocol/server-everything, installed beside the SDK by
// hack/tsagent.sh) running as a process of its own, serving Streamable HTTP
// with sessions, as its maintainers ship it. Its tools exercise the
// protocol's features: text, structured content with an output schema,
// images, embedded resources and resource links, progress, and (for a
// client that declares them) elicitation and sampling.
type Everything struct {
	// URL is its MCP endpoint.
	URL string

	cmd  *exec.Cmd
	done chan struct{}

	mu  sync.Mutex
	log strings.Builder
}

// The names of some of its tools, as it registers them for every client.
const (
	EverythingEcho              = "echo"
	EverythingSum               = "get-sum"
	EverythingStructuredContent = "get-structured-content"
	EverythingTinyImage         = "get-tiny-image"
	EverythingResourceLinks     = "get-resource-links"
	EverythingLongRunning       = "trigger-long-running-operation"
)

// StartEverything starts the reference server on a free loopback port and
// returns once it listens. It stops when ctx ends or Stop is called.
func StartEverything(ctx context.Context) (*Everything, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	entry := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything", "dist", "index.js")
	if _, err := os.Stat(entry); err != nil {
		return nil, fmt.Errorf("tsagent: the reference server is not installed (hack/tsagent.sh installs it): %w", err)
	}
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	e := &Everything{URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), done: make(chan struct{})}
	e.cmd = exec.CommandContext(ctx, "node", entry, "streamableHttp")
	e.cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := e.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	e.cmd.Stdout = io.Discard
	if err := e.cmd.Start(); err != nil {
		return nil, fmt.Errorf("tsagent: starting the reference server: %w", err)
	}
	listening := make(chan struct{})
	go func() {
		defer close(e.done)
		sc := bufio.NewScanner(stderr)
		said := false
		for sc.Scan() {
			line := sc.Text()
			e.mu.Lock()
			e.log.WriteString(line + "\n")
			e.mu.Unlock()
			if !said && strings.Contains(line, "listening on port") {
				said = true
				close(listening)
			}
		}
		_ = e.cmd.Wait()
	}()
	select {
	case <-listening:
		return e, nil
	case <-e.done:
		return nil, fmt.Errorf("tsagent: the reference server exited before it listened:\n%s", e.Log())
	case <-time.After(30 * time.Second):
		e.Stop()
		return nil, fmt.Errorf("tsagent: the reference server did not listen within 30s:\n%s", e.Log())
	}
}

// Log is what the server wrote to its standard error.
func (e *Everything) Log() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.log.String()
}

// Stop ends the server and waits for it.
func (e *Everything) Stop() {
	if e.cmd.Process != nil {
		_ = e.cmd.Process.Kill()
	}
	<-e.done
}

// freePort is a loopback port nothing listens on now.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("tsagent: finding a free port: %w", err)
	}
	defer l.Close()
	addr, ok := l.Addr().(*net.TCPAddr)
	if !ok {
		return 0, errors.New("tsagent: a listener without a TCP address")
	}
	return addr.Port, nil
}
