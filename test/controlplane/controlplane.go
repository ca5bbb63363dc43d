// Package controlplane starts the API server every envtest-based test of
// this module runs against: kube-apiserver and etcd from envtest, the
// operator's CRDs installed unless a test wants a bare server, extra CRDs,
// and kube-controller-manager when a test needs a controller of a real
// cluster (the garbage collector). It imports nothing of the operator but
// its API types, so the operator's own packages can use it in their tests;
// test/testenv adds the operator's manager, logs and namespaces on top.
package controlplane

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/mcp-catalog/operator/api/scheme"
)

// StartTimeout bounds the start of each control plane process. envtest's
// default (20s) is too short for a kube-apiserver starting on a busy
// two-core machine.
const StartTimeout = 2 * time.Minute

// ControlPlane is a running API server and a direct (uncached) client to
// it, with the operator's types in its scheme.
type ControlPlane struct {
	Env    *envtest.Environment
	Config *rest.Config
	Client client.Client

	kcm      *controllerManager
	stopOnce sync.Once
	stopErr  error
}

type config struct {
	bare        bool
	crdPaths    []string
	crds        []*apiextensionsv1.CustomResourceDefinition
	controllers []string
}

// Option changes what Start starts.
type Option func(*config)

// Bare starts the API server without the operator's CRDs, for tests that
// install them the way a user does (a chart, kustomize, a release).
func Bare() Option { return func(c *config) { c.bare = true } }

// WithCRDPaths installs the CRDs in these files or directories too.
func WithCRDPaths(paths ...string) Option {
	return func(c *config) { c.crdPaths = append(c.crdPaths, paths...) }
}

// WithCRDs installs these CRDs too.
func WithCRDs(crds ...*apiextensionsv1.CustomResourceDefinition) Option {
	return func(c *config) { c.crds = append(c.crds, crds...) }
}

// WithControllers runs kube-controller-manager with only these controllers
// (for example "garbagecollector") against the API server. KUBEBUILDER_ASSETS
// must hold the binary: hack/envtest.sh --with-controller-manager builds it.
func WithControllers(controllers ...string) Option {
	return func(c *config) { c.controllers = append(c.controllers, controllers...) }
}

// CRDDir is config/crd/bases of this module, found from the working
// directory up (go test runs a test in its package's directory). It does
// not ask the runtime where this file was compiled: with -trimpath, as make
// builds everything, that is a module path rather than a directory.
func CRDDir() string {
	dir, err := os.Getwd()
	if err != nil {
		return filepath.Join("config", "crd", "bases")
	}
	for {
		if mod, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && bytes.HasPrefix(mod, []byte("module github.com/mcp-catalog/operator\n")) {
			return filepath.Join(dir, "config", "crd", "bases")
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return filepath.Join("config", "crd", "bases")
		}
		dir = parent
	}
}

// Start starts a control plane for tb and stops it when tb ends. A failure
// to start fails tb; so does a failure to stop, or a controller manager
// that exited early.
func Start(tb testing.TB, opts ...Option) *ControlPlane {
	tb.Helper()
	cp, err := New(opts...)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			tb.Errorf("stopping the control plane: %v", err)
		}
		if tb.Failed() && cp.kcm != nil {
			tb.Logf("kube-controller-manager's log ends with:\n%s", Tail(cp.kcm.out.String(), 40))
		}
	})
	return cp
}

// New starts a control plane; the caller stops it. It is for a TestMain,
// which has no testing.TB; tests use Start.
func New(opts ...Option) (*ControlPlane, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	assets := os.Getenv("KUBEBUILDER_ASSETS")
	if assets == "" {
		return nil, errors.New("KUBEBUILDER_ASSETS is not set: run the tests through `make test`, " +
			"or set KUBEBUILDER_ASSETS=$(hack/envtest.sh) (with --with-controller-manager for tests that run kube-controller-manager)")
	}
	env := &envtest.Environment{
		CRDs:                     c.crds,
		ErrorIfCRDPathMissing:    true,
		ControlPlaneStartTimeout: StartTimeout,
	}
	if !c.bare {
		env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, CRDDir())
	}
	env.CRDDirectoryPaths = append(env.CRDDirectoryPaths, c.crdPaths...)
	cfg, err := env.Start()
	if err != nil {
		return nil, fmt.Errorf("starting the control plane (envtest, KUBEBUILDER_ASSETS=%s): %w", assets, err)
	}
	cp := &ControlPlane{Env: env, Config: cfg}
	if cp.Client, err = client.New(cfg, client.Options{Scheme: scheme.New()}); err != nil {
		return nil, errors.Join(err, env.Stop())
	}
	if len(c.controllers) > 0 {
		if cp.kcm, err = startControllerManager(filepath.Join(assets, "kube-controller-manager"), cp, c.controllers); err != nil {
			return nil, errors.Join(err, env.Stop())
		}
	}
	return cp, nil
}

// Stop stops the controller manager, if any, and the control plane. Only
// the first call stops; later ones return its result.
func (cp *ControlPlane) Stop() error {
	if cp == nil {
		return nil
	}
	cp.stopOnce.Do(func() {
		var errs []error
		if cp.kcm != nil {
			errs = append(errs, cp.kcm.stop())
		}
		errs = append(errs, cp.Env.Stop())
		cp.stopErr = errors.Join(errs...)
	})
	return cp.stopErr
}

// Kubeconfig writes a kubeconfig for an administrator (group system:masters)
// of the control plane to a file of its own and returns its path, for
// programs a test runs against it (kubectl, kube-controller-manager).
func (cp *ControlPlane) Kubeconfig(dir string) (string, error) {
	user, err := cp.Env.ControlPlane.AddUser(envtest.User{Name: "test-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return "", fmt.Errorf("adding an administrator to the control plane: %w", err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(path, kc, 0o600); err != nil {
		return "", err
	}
	return path, nil
}

// Tail returns the last n lines of s.
func Tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
