package manager

import "testing"

func TestTracingIsOffUnlessAnEndpointIsGiven(t *testing.T) {
	for _, tc := range []struct {
		name              string
		flag, env, traces string
		disabled          string
		want              bool
	}{
		{name: "nothing set"},
		{name: "flag", flag: "http://collector:4317", want: true},
		{name: "OTEL_EXPORTER_OTLP_ENDPOINT", env: "http://collector:4317", want: true},
		{name: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", traces: "http://collector:4317", want: true},
		{name: "OTEL_SDK_DISABLED wins", flag: "http://collector:4317", disabled: "true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", tc.env)
			t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", tc.traces)
			t.Setenv("OTEL_SDK_DISABLED", tc.disabled)
			if got := tracingEnabled(tc.flag); got != tc.want {
				t.Errorf("tracingEnabled = %t, want %t", got, tc.want)
			}
		})
	}
}
