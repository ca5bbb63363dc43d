package manager

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/mcp-catalog/operator/internal/logging"
)

// tracingEnabled reports whether the gateway exports traces: an endpoint
// given by flag, or by the standard OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT
// variables, and OTEL_SDK_DISABLED not true.
func tracingEnabled(endpoint string) bool {
	if strings.EqualFold(os.Getenv("OTEL_SDK_DISABLED"), "true") {
		return false
	}
	return endpoint != "" || os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// newTracerProvider builds the OTLP/gRPC trace pipeline. The exporter and
// the SDK read the other OTEL_* variables themselves (headers, TLS,
// timeout, compression, OTEL_TRACES_SAMPLER, OTEL_SERVICE_NAME,
// OTEL_RESOURCE_ATTRIBUTES); the flag's endpoint, when set, wins over
// the environment's.
func newTracerProvider(ctx context.Context, endpoint string) (*sdktrace.TracerProvider, error) {
	var opts []otlptracegrpc.Option
	if endpoint != "" {
		opts = append(opts, otlptracegrpc.WithEndpointURL(endpoint))
	}
	exp, err := otlptracegrpc.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("creating the OTLP trace exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(resourceDefaults()...),
		resource.WithFromEnv(),
		resource.WithTelemetrySDK(),
	)
	if err != nil {
		return nil, fmt.Errorf("describing the trace resource: %w", err)
	}
	return sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res)), nil
}

// tracerShutdown flushes and stops a tracer provider when the manager
// stops.
type tracerShutdown struct {
	tp *sdktrace.TracerProvider
}

var _ manager.LeaderElectionRunnable = tracerShutdown{}

func (s tracerShutdown) NeedLeaderElection() bool { return false }

func (s tracerShutdown) Start(ctx context.Context) error {
	<-ctx.Done()
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := s.tp.Shutdown(flush); err != nil {
		logging.FromContext(ctx, logging.Manager).Error(err, "flushing traces at shutdown failed")
	}
	return nil
}

// gatewayTracer is the tracer provider the gateway uses: the one the
// options give (tests), else an OTLP pipeline when tracing is enabled,
// else nil, which traces nothing.
func gatewayTracer(mgr ctrl.Manager, opts Options) (trace.TracerProvider, error) {
	if opts.TracerProvider != nil {
		return opts.TracerProvider, nil
	}
	if !tracingEnabled(opts.TracingOTLPEndpoint) {
		return nil, nil
	}
	tp, err := newTracerProvider(context.Background(), opts.TracingOTLPEndpoint)
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(tracerShutdown{tp: tp}); err != nil {
		return nil, fmt.Errorf("adding the tracer shutdown: %w", err)
	}
	return tp, nil
}

// resourceDefaults name the service; OTEL_SERVICE_NAME and
// OTEL_RESOURCE_ATTRIBUTES override them.
func resourceDefaults() []attribute.KeyValue {
	return []attribute.KeyValue{
		attribute.String("service.name", "mcp-catalog-gateway"),
		attribute.String("service.version", Version),
	}
}
