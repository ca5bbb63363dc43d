package registry

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	mcpv1alpha1 "github.com/mcp-catalog/operator/api/v1alpha1"
)

func TestCallable(t *testing.T) {
	created := metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	imported := metav1.NewTime(time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC))
	no := false
	srv := &mcpv1alpha1.McpServer{
		ObjectMeta: metav1.ObjectMeta{Name: "weather", Namespace: "agents", Generation: 4, CreationTimestamp: created},
		Spec:       mcpv1alpha1.McpServerSpec{DataClass: mcpv1alpha1.DataClassInternal},
	}
	c := Callable(srv, "agents", "mcp_weather", []string{"mcp_weather_forecast"})
	if c.Version != "0.0.4" || !c.ApprovalRequired || c.DataClass != "Internal" || c.Origin != nil || !c.UpdatedAt.Equal(created.Time) {
		t.Errorf("a declared server: %+v", c)
	}
	srv.Annotations = map[string]string{
		mcpv1alpha1.AnnotationRegistryURL:     OfficialURL,
		mcpv1alpha1.AnnotationRegistryName:    "io.github.user/weather",
		mcpv1alpha1.AnnotationRegistryVersion: "1.0.2",
	}
	srv.Spec.ApprovalRequired = &no
	srv.Status.LastImportTime = &imported
	c = Callable(srv, "team-b", "mcps_weather", nil)
	if c.Version != "1.0.2" || c.ApprovalRequired || c.Origin == nil || c.Origin.Name != "io.github.user/weather" || !c.UpdatedAt.Equal(imported.Time) || c.Namespace != "team-b" {
		t.Errorf("an imported server: %+v", c)
	}
	srv.Annotations[mcpv1alpha1.AnnotationRegistryVersion] = "not a version"
	if c := Callable(srv, "agents", "mcp_weather", nil); c.Version != "0.0.4" {
		t.Errorf("a recorded version with a space is not served: %s", c.Version)
	}
}
