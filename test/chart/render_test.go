package chart

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// fullname is the prefix of every object the chart renders for releaseName.
const fullname = releaseName + "-mcp-catalog-operator"

// namespacedKinds are the kinds the chart renders into a namespace.
var namespacedKinds = map[string]bool{
	"ServiceAccount": true, "Deployment": true, "Service": true, "Role": true, "RoleBinding": true,
	"ServiceMonitor": true, "NetworkPolicy": true, "PodDisruptionBudget": true, "HorizontalPodAutoscaler": true,
	"PrometheusRule": true, "ConfigMap": true, "Secret": true,
}

func TestLint(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			args := []string{"lint", "--strict", chartDir, "--namespace", releaseNS, "--kube-version", floorKubeVersion}
			out, stderr, err := helm(t, append(args, valuesFile(t, vs.values)...)...)
			if err != nil {
				t.Fatalf("helm lint failed: %v\n%s%s", err, out, stderr)
			}
		})
	}
}

func TestTemplate(t *testing.T) {
	for _, vs := range valueSets {
		t.Run(vs.name, func(t *testing.T) {
			objs := render(t, vs.values, floorKubeVersion)
			checkInvariants(t, vs, objs)
			vs.check(t, objs)
		})
	}
}

func TestKubeVersionFloor(t *testing.T) {
	_, stderr, err := helm(t, templateArgs(t, "", "1.29.9")...)
	if err == nil {
		t.Fatal("helm template for Kubernetes 1.29 succeeded; Chart.yaml must require >= 1.30")
	}
	if !strings.Contains(stderr, "kubeVersion") {
		t.Errorf("the error does not name kubeVersion:\n%s", stderr)
	}
}

// convert turns a rendered object into its typed form.
func convert[T any](t *testing.T, u *unstructured.Unstructured) *T {
	t.Helper()
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, out, true); err != nil {
		t.Fatalf("%s %s does not convert to its type: %v", u.GetKind(), u.GetName(), err)
	}
	return out
}

// one returns the single typed object of kind and name, failing when absent.
func one[T any](t *testing.T, objs []*unstructured.Unstructured, kind, name string) *T {
	t.Helper()
	u := find(objs, kind, name)
	if u == nil {
		t.Fatalf("no %s %q rendered", kind, name)
	}
	return convert[T](t, u)
}

func manager(t *testing.T, objs []*unstructured.Unstructured) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	for _, u := range byKind(objs, "Deployment") {
		if n := u.GetName(); n != fullname && !isGateway(n) && !strings.HasPrefix(n, fullname+"-shard-") {
			t.Fatalf("rendered Deployment %s, want only the manager, its shards and the gateway (or its pools)", n)
		}
	}
	d := one[appsv1.Deployment](t, objs, "Deployment", fullname)
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "manager" {
		t.Fatalf("want one container named manager, got %d", len(cs))
	}
	return d, &cs[0]
}

// gatewayDeployment returns the gateway's Deployment and container, or nil
// when the values deploy no gateway.
func gatewayDeployment(t *testing.T, objs []*unstructured.Unstructured) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	if find(objs, "Deployment", fullname+"-gateway") == nil {
		return nil, nil
	}
	d := one[appsv1.Deployment](t, objs, "Deployment", fullname+"-gateway")
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 || cs[0].Name != "gateway" {
		t.Fatalf("want one container named gateway, got %d", len(cs))
	}
	return d, &cs[0]
}

// isGateway reports whether an object of the chart is named for a gateway:
// the one gateway, or a pool's (<fullname>-gateway-<pool>).
func isGateway(name string) bool {
	return name == fullname+"-gateway" || (strings.HasPrefix(name, fullname+"-gateway-") && name != fullname+"-gateway-auth")
}

// gatewayDeployments returns every gateway Deployment, the one gateway's or
// each pool's, with its container.
func gatewayDeployments(t *testing.T, objs []*unstructured.Unstructured) ([]*appsv1.Deployment, []*corev1.Container) {
	t.Helper()
	var ds []*appsv1.Deployment
	var cs []*corev1.Container
	for _, u := range byKind(objs, "Deployment") {
		if !isGateway(u.GetName()) {
			continue
		}
		d := convert[appsv1.Deployment](t, u)
		c := d.Spec.Template.Spec.Containers
		if len(c) != 1 || c[0].Name != "gateway" {
			t.Fatalf("Deployment %s: want one container named gateway, got %d", d.Name, len(c))
		}
		ds, cs = append(ds, d), append(cs, &c[0])
	}
	return ds, cs
}

// flags parses --name=value arguments, failing on any other shape or a
// repeated flag (the last one would silently win).
func flags(t *testing.T, c *corev1.Container) map[string]string {
	t.Helper()
	m := map[string]string{}
	for _, a := range c.Args {
		name, value, ok := strings.Cut(a, "=")
		if !ok || !strings.HasPrefix(name, "--") {
			t.Errorf("argument %q is not --name=value", a)
			continue
		}
		if _, dup := m[name]; dup {
			t.Errorf("flag %s passed twice", name)
		}
		m[name] = value
	}
	return m
}

func containerPort(c *corev1.Container, name string) (int32, bool) {
	for _, p := range c.Ports {
		if p.Name == name {
			return p.ContainerPort, true
		}
	}
	return 0, false
}

func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// checkInvariants asserts what every value set must render: a hardened
// Deployment whose probes, ports and selectors fit together, objects in the
// right namespaces, and bindings to roles and a ServiceAccount that exist.
func checkInvariants(t *testing.T, vs valueSet, objs []*unstructured.Unstructured) {
	allowedNS := append([]string{releaseNS}, vs.namespaces...)
	seen := map[string]bool{}
	for _, o := range objs {
		key := o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		if seen[key] {
			t.Errorf("%s rendered twice", key)
		}
		seen[key] = true
		if namespacedKinds[o.GetKind()] {
			if !slices.Contains(allowedNS, o.GetNamespace()) {
				t.Errorf("%s %s is in namespace %q, want one of %v", o.GetKind(), o.GetName(), o.GetNamespace(), allowedNS)
			}
		} else if o.GetNamespace() != "" {
			t.Errorf("cluster-scoped %s %s has namespace %q", o.GetKind(), o.GetName(), o.GetNamespace())
		}
		l := o.GetLabels()
		if l["app.kubernetes.io/instance"] != releaseName || l["app.kubernetes.io/managed-by"] != "Helm" || l["app.kubernetes.io/name"] != "mcp-catalog-operator" {
			t.Errorf("%s %s lacks the chart's labels: %v", o.GetKind(), o.GetName(), l)
		}
	}

	md, mc := manager(t, objs)
	deployments := []struct {
		d *appsv1.Deployment
		c *corev1.Container
	}{{md, mc}}
	gds, gcs := gatewayDeployments(t, objs)
	var gatewaySubjects []rbacv1.Subject
	for i := range gds {
		deployments = append(deployments, struct {
			d *appsv1.Deployment
			c *corev1.Container
		}{gds[i], gcs[i]})
		gatewaySubjects = append(gatewaySubjects, rbacv1.Subject{Kind: "ServiceAccount", Name: gds[i].Spec.Template.Spec.ServiceAccountName, Namespace: releaseNS})
	}
	for _, dc := range deployments {
		checkPod(t, objs, dc.d, dc.c)
	}
	// Services, budgets, policies and autoscalers each serve the pods of one
	// Deployment, on ports its container has.
	owner := func(selector map[string]string) (*appsv1.Deployment, *corev1.Container) {
		for _, dc := range deployments {
			if selects(selector, dc.d.Spec.Template.Labels) {
				return dc.d, dc.c
			}
		}
		return nil, nil
	}
	for _, u := range byKind(objs, "Service") {
		s := convert[corev1.Service](t, u)
		_, c := owner(s.Spec.Selector)
		if c == nil {
			t.Errorf("Service %s selector %v selects no rendered pods", s.Name, s.Spec.Selector)
			continue
		}
		for _, p := range s.Spec.Ports {
			if _, ok := containerPort(c, p.TargetPort.StrVal); p.TargetPort.Type != intstr.String || !ok {
				t.Errorf("Service %s port %s targets %s, which is no named container port", s.Name, p.Name, p.TargetPort.String())
			}
		}
	}
	for _, u := range byKind(objs, "PodDisruptionBudget") {
		p := convert[policyv1.PodDisruptionBudget](t, u)
		if d, _ := owner(p.Spec.Selector.MatchLabels); p.Spec.Selector == nil || d == nil {
			t.Errorf("PodDisruptionBudget %s selects no rendered pods", p.Name)
		}
	}
	for _, u := range byKind(objs, "NetworkPolicy") {
		np := convert[networkingv1.NetworkPolicy](t, u)
		_, c := owner(np.Spec.PodSelector.MatchLabels)
		if c == nil {
			t.Errorf("NetworkPolicy %s selects no rendered pods", np.Name)
			continue
		}
		for _, r := range np.Spec.Ingress {
			for _, p := range r.Ports {
				if _, ok := containerPort(c, p.Port.StrVal); !ok {
					t.Errorf("NetworkPolicy %s opens port %s, which is no named container port", np.Name, p.Port.String())
				}
			}
		}
	}

	// Bindings name a rendered ServiceAccount of a pod (the gateway's
	// bindings the gateway's) and roles the chart renders.
	for _, dc := range deployments {
		if sa := dc.d.Spec.Template.Spec.ServiceAccountName; find(objs, "ServiceAccount", sa) == nil {
			t.Errorf("the pod's ServiceAccount %q is not rendered", sa)
		}
	}
	for _, kind := range []string{"RoleBinding", "ClusterRoleBinding"} {
		for _, u := range byKind(objs, kind) {
			if u.GetName() == fullname+"-metrics-scraper" {
				continue // the scraper's binding; checkMonitored checks it
			}
			var ref rbacv1.RoleRef
			var subjects []rbacv1.Subject
			if kind == "RoleBinding" {
				b := convert[rbacv1.RoleBinding](t, u)
				ref, subjects = b.RoleRef, b.Subjects
			} else {
				b := convert[rbacv1.ClusterRoleBinding](t, u)
				ref, subjects = b.RoleRef, b.Subjects
			}
			want := []rbacv1.Subject{{Kind: "ServiceAccount", Name: md.Spec.Template.Spec.ServiceAccountName, Namespace: releaseNS}}
			switch {
			case u.GetName() == fullname+"-gateway-auth" || u.GetName() == fullname+"-approval-key":
				// Every gateway (every pool) reviews tokens and signs
				// call approvals with the one key.
				want = gatewaySubjects
			case isGateway(u.GetName()):
				// A gateway's (a pool's) own bindings name its own
				// ServiceAccount only.
				want = []rbacv1.Subject{{Kind: "ServiceAccount", Name: u.GetName(), Namespace: releaseNS}}
			}
			if !slices.Equal(subjects, want) {
				t.Errorf("%s %s/%s binds %v, want %v", kind, u.GetNamespace(), u.GetName(), subjects, want)
			}
			role := find(objs, ref.Kind, ref.Name)
			if role == nil || (ref.Kind == "Role" && role.GetNamespace() != u.GetNamespace()) {
				t.Errorf("%s %s/%s refers to %s %s, which is not rendered next to it", kind, u.GetNamespace(), u.GetName(), ref.Kind, ref.Name)
			}
		}
	}
}

// checkPod asserts a hardened pod whose probes and ports fit together.
func checkPod(t *testing.T, objs []*unstructured.Unstructured, d *appsv1.Deployment, c *corev1.Container) {
	t.Helper()
	pod := d.Spec.Template.Spec
	podLabels := d.Spec.Template.Labels
	if d.Spec.Selector == nil || !selects(d.Spec.Selector.MatchLabels, podLabels) {
		t.Errorf("Deployment selector %v does not select its pods %v", d.Spec.Selector, podLabels)
	}

	// Hardening.
	psc := pod.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Error("pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Error("pod seccompProfile is not RuntimeDefault")
	}
	sc := c.SecurityContext
	switch {
	case sc == nil:
		t.Error("container has no securityContext")
	default:
		if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Error("allowPrivilegeEscalation is not false")
		}
		if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
			t.Error("readOnlyRootFilesystem is not true")
		}
		if sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || len(sc.Capabilities.Add) != 0 {
			t.Errorf("capabilities are not drop [ALL] with nothing added: %+v", sc.Capabilities)
		}
		if sc.Privileged != nil && *sc.Privileged {
			t.Error("container is privileged")
		}
	}
	if c.Resources.Requests.Cpu().IsZero() || c.Resources.Requests.Memory().IsZero() {
		t.Errorf("resource requests lack cpu or memory: %v", c.Resources.Requests)
	}
	if c.Resources.Limits.Memory().IsZero() {
		t.Errorf("no memory limit: %v", c.Resources.Limits)
	}
	wantMemoryLimitEnv(t, c)
	if pod.AutomountServiceAccountToken == nil || !*pod.AutomountServiceAccountToken {
		t.Error("the manager needs its ServiceAccount token mounted")
	}

	// Probes reach the port the manager serves them on.
	f := flags(t, c)
	healthPort, ok := containerPort(c, "health")
	if !ok {
		t.Fatal("no container port named health")
	}
	if got, want := f["--health-probe-bind-address"], fmt.Sprintf(":%d", healthPort); got != want {
		t.Errorf("--health-probe-bind-address=%s, but the health port is %s", got, want)
	}
	for probe, path := range map[string]*corev1.Probe{"/healthz": c.LivenessProbe, "/readyz": c.ReadinessProbe} {
		if path == nil || path.HTTPGet == nil {
			t.Errorf("no HTTP probe for %s", probe)
			continue
		}
		if path.HTTPGet.Path != probe || path.HTTPGet.Port != intstr.FromString("health") {
			t.Errorf("probe for %s is %s on %s", probe, path.HTTPGet.Path, path.HTTPGet.Port.String())
		}
	}
	if mp, ok := containerPort(c, "metrics"); ok {
		if got, want := f["--metrics-bind-address"], fmt.Sprintf(":%d", mp); got != want {
			t.Errorf("--metrics-bind-address=%s, but the metrics port is %s", got, want)
		}
	}

}

func wantArgs(t *testing.T, c *corev1.Container, want []string) {
	t.Helper()
	if !slices.Equal(c.Args, want) {
		t.Errorf("manager args\n got: %q\nwant: %q", c.Args, want)
	}
}

// wantMemoryLimitEnv: GOMEMLIMIT is the container's memory limit in bytes,
// read by the kubelet from the container's own resources.
func wantMemoryLimitEnv(t *testing.T, c *corev1.Container) {
	t.Helper()
	for _, e := range c.Env {
		if e.Name != "GOMEMLIMIT" {
			continue
		}
		ref := e.ValueFrom
		if e.Value != "" || ref == nil || ref.ResourceFieldRef == nil {
			t.Fatalf("GOMEMLIMIT is not read from the container's resources: %+v", e)
		}
		r := ref.ResourceFieldRef
		if r.Resource != "limits.memory" || r.ContainerName != c.Name || r.Divisor.String() != "1" {
			t.Errorf("GOMEMLIMIT from %s of %q with divisor %s, want limits.memory of %q in bytes", r.Resource, r.ContainerName, r.Divisor.String(), c.Name)
		}
		if c.Resources.Limits.Memory().IsZero() {
			t.Error("GOMEMLIMIT is set without a memory limit")
		}
		return
	}
	t.Error("GOMEMLIMIT is not set")
}

func checkEgress(t *testing.T, objs []*unstructured.Unstructured) {
	_, c := manager(t, objs)
	for _, want := range []string{
		"--allowed-private-cidrs=10.0.0.0/8,fd00::/8",
		"--namespace-private-cidrs=team-a=172.20.0.0/16,127.0.0.1/32;team-b=192.168.10.0/24",
		"--token-endpoint-proxy=http://proxy.internal:3128",
	} {
		if !slices.Contains(c.Args, want) {
			t.Errorf("manager args %q lack %q", c.Args, want)
		}
	}
	if got := c.Resources.Limits.Memory().String(); got != "512Mi" {
		t.Errorf("memory limit %s, want the value's 512Mi", got)
	}
}

func wantAbsent(t *testing.T, objs []*unstructured.Unstructured, kinds ...string) {
	t.Helper()
	for _, k := range kinds {
		for _, o := range byKind(objs, k) {
			t.Errorf("unexpected %s %s", k, o.GetName())
		}
	}
}

func crdNames(objs []*unstructured.Unstructured) []string {
	var names []string
	for _, o := range byKind(objs, "CustomResourceDefinition") {
		names = append(names, o.GetName())
	}
	slices.Sort(names)
	return names
}

func checkDefaults(t *testing.T, objs []*unstructured.Unstructured) {
	d, c := manager(t, objs)
	wantArgs(t, c, []string{
		"--components=controllers",
		"--leader-elect=true",
		"--metrics-bind-address=:8443",
		"--metrics-secure=true",
		"--health-probe-bind-address=:8081",
		"--allow-private-networks=false",
		"--max-concurrent-servers=16",
		"--zap-log-level=info",
		"--zap-encoder=json",
	})
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 1 {
		t.Errorf("replicas %v, want 1", d.Spec.Replicas)
	}
	if want := "ghcr.io/mcp-catalog/mcp-catalog-operator:" + chartMeta(t).AppVersion; c.Image != want {
		t.Errorf("image %q, want %q", c.Image, want)
	}
	if c.ImagePullPolicy != corev1.PullIfNotPresent {
		t.Errorf("pull policy %q", c.ImagePullPolicy)
	}
	if _, ok := containerPort(c, "gateway"); ok {
		t.Error("the gateway port is exposed though gateway.enabled is false")
	}

	if got, want := crdNames(objs), baseCRDNames(t); !slices.Equal(got, want) {
		t.Errorf("CRDs %v, want %v", got, want)
	}
	for _, o := range byKind(objs, "CustomResourceDefinition") {
		if o.GetAnnotations()["helm.sh/resource-policy"] != "keep" {
			t.Errorf("CRD %s lacks helm.sh/resource-policy: keep (crds.keep defaults to true)", o.GetName())
		}
	}

	// Cluster-wide: one ClusterRoleBinding of the manager role, no RoleBindings of it.
	crb := one[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", fullname+"-manager")
	if crb.RoleRef.Name != fullname+"-manager" || crb.RoleRef.Kind != "ClusterRole" {
		t.Errorf("manager ClusterRoleBinding refers to %+v", crb.RoleRef)
	}
	for _, u := range byKind(objs, "RoleBinding") {
		if b := convert[rbacv1.RoleBinding](t, u); b.RoleRef.Name == fullname+"-manager" {
			t.Errorf("RoleBinding %s/%s of the manager role without watchNamespaces", b.Namespace, b.Name)
		}
	}

	le := one[rbacv1.Role](t, objs, "Role", fullname+"-leader-election")
	if le.Namespace != releaseNS || !grants(le.Rules, "coordination.k8s.io", "leases", "create", "update", "get") {
		t.Errorf("leader-election Role in %q does not grant leases: %+v", le.Namespace, le.Rules)
	}
	one[rbacv1.RoleBinding](t, objs, "RoleBinding", fullname+"-leader-election")

	ma := one[rbacv1.ClusterRole](t, objs, "ClusterRole", fullname+"-metrics-auth")
	if !slices.EqualFunc(ma.Rules, []rbacv1.PolicyRule{
		{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	}, ruleEqual) {
		t.Errorf("metrics-auth rules: %+v", ma.Rules)
	}
	one[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", fullname+"-metrics-auth")
	mr := one[rbacv1.ClusterRole](t, objs, "ClusterRole", fullname+"-metrics-reader")
	if !slices.EqualFunc(mr.Rules, []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}, ruleEqual) {
		t.Errorf("metrics-reader rules: %+v", mr.Rules)
	}

	svc := one[corev1.Service](t, objs, "Service", fullname+"-metrics")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 8443 {
		t.Errorf("metrics Service ports %+v, want 8443", svc.Spec.Ports)
	}
	if find(objs, "Service", fullname+"-gateway") != nil {
		t.Error("gateway Service rendered though gateway.enabled is false")
	}
	wantAbsent(t, objs, "ServiceMonitor", "NetworkPolicy", "PodDisruptionBudget")
	pod := d.Spec.Template.Spec
	if len(pod.ImagePullSecrets) != 0 || pod.PriorityClassName != "" || len(pod.NodeSelector) != 0 || len(pod.Tolerations) != 0 || pod.Affinity != nil {
		t.Errorf("scheduling or pull settings rendered without values: %+v", pod)
	}
}

func checkWatchNamespaces(t *testing.T, objs []*unstructured.Unstructured) {
	d, c := manager(t, objs)
	f := flags(t, c)
	if f["--watch-namespaces"] != "team-a,team-b" {
		t.Errorf("--watch-namespaces=%q, want team-a,team-b", f["--watch-namespaces"])
	}
	if f["--zap-log-level"] != "2" || f["--zap-encoder"] != "console" {
		t.Errorf("logging flags %q %q", f["--zap-log-level"], f["--zap-encoder"])
	}
	wantAbsent(t, objs, "CustomResourceDefinition")

	if find(objs, "ClusterRoleBinding", fullname+"-manager") != nil {
		t.Error("a ClusterRoleBinding grants the manager role everywhere although watchNamespaces is set")
	}
	var bound []string
	for _, u := range byKind(objs, "RoleBinding") {
		b := convert[rbacv1.RoleBinding](t, u)
		if b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == fullname+"-manager" {
			bound = append(bound, b.Namespace)
		}
	}
	slices.Sort(bound)
	if !slices.Equal(bound, []string{"team-a", "team-b"}) {
		t.Errorf("manager role bound in %v, want [team-a team-b]", bound)
	}
	one[rbacv1.ClusterRole](t, objs, "ClusterRole", fullname+"-manager")

	if d.Spec.Template.Spec.ServiceAccountName != "catalog-manager" {
		t.Errorf("serviceAccountName %q", d.Spec.Template.Spec.ServiceAccountName)
	}
	sa := one[corev1.ServiceAccount](t, objs, "ServiceAccount", "catalog-manager")
	if sa.Annotations["example.com/owner"] != "platform" {
		t.Errorf("ServiceAccount annotations %v", sa.Annotations)
	}
}

func checkMonitored(t *testing.T, objs []*unstructured.Unstructured) {
	d, _ := manager(t, objs)
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas %v, want 2", d.Spec.Replicas)
	}
	pod := d.Spec.Template.Spec
	if !slices.Equal(pod.ImagePullSecrets, []corev1.LocalObjectReference{{Name: "registry-credentials"}}) {
		t.Errorf("imagePullSecrets %v", pod.ImagePullSecrets)
	}
	if pod.NodeSelector["kubernetes.io/os"] != "linux" || len(pod.Tolerations) != 1 || pod.Tolerations[0].Key != "dedicated" {
		t.Errorf("nodeSelector %v tolerations %v", pod.NodeSelector, pod.Tolerations)
	}
	if pod.Affinity == nil || pod.Affinity.PodAntiAffinity == nil || len(pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Errorf("affinity %+v", pod.Affinity)
	}
	if pod.PriorityClassName != "platform-critical" {
		t.Errorf("priorityClassName %q", pod.PriorityClassName)
	}
	if d.Spec.Template.Annotations["example.com/scrape"] != "true" {
		t.Errorf("pod annotations %v", d.Spec.Template.Annotations)
	}

	sm := find(objs, "ServiceMonitor", fullname)
	if sm == nil {
		t.Fatal("no ServiceMonitor")
	}
	svc := one[corev1.Service](t, objs, "Service", fullname+"-metrics")
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if !selects(sel, svc.Labels) {
		t.Errorf("ServiceMonitor selector %v does not select the metrics Service %v", sel, svc.Labels)
	}
	if sm.GetLabels()["release"] != "prometheus" {
		t.Errorf("ServiceMonitor labels %v lack release: prometheus", sm.GetLabels())
	}
	eps, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(eps) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v", eps)
	}
	ep := eps[0].(map[string]any)
	if ep["port"] != "metrics" || ep["scheme"] != "https" {
		t.Errorf("ServiceMonitor endpoint %v: want port metrics over https", ep)
	}
	// The token comes from a Secret through authorization, not the
	// deprecated bearerTokenFile; the certificate is verified against the CA.
	if _, ok := ep["bearerTokenFile"]; ok {
		t.Errorf("ServiceMonitor endpoint uses the deprecated bearerTokenFile: %v", ep)
	}
	scraper := fullname + "-metrics-scraper"
	cred, _, _ := unstructured.NestedStringMap(ep, "authorization", "credentials")
	if typ, _, _ := unstructured.NestedString(ep, "authorization", "type"); typ != "Bearer" || cred["name"] != scraper || cred["key"] != "token" {
		t.Errorf("ServiceMonitor authorization %v: want Bearer from Secret %s key token", ep["authorization"], scraper)
	}
	tls, _, _ := unstructured.NestedMap(ep, "tlsConfig")
	ca, _, _ := unstructured.NestedStringMap(tls, "ca", "configMap")
	if ca["name"] != "metrics-ca" || ca["key"] != "ca.crt" || tls["serverName"] != fullname+"-metrics."+releaseNS+".svc" || tls["insecureSkipVerify"] != nil {
		t.Errorf("ServiceMonitor tlsConfig %v: want the CA from ConfigMap metrics-ca and the Service's name, verification on", tls)
	}
	// The scraper identity the chart made: a token Secret for its
	// ServiceAccount, which is bound to metrics-reader.
	sec := one[corev1.Secret](t, objs, "Secret", scraper)
	if sec.Type != corev1.SecretTypeServiceAccountToken || sec.Annotations[corev1.ServiceAccountNameKey] != scraper {
		t.Errorf("scraper Secret %+v: want a token Secret of ServiceAccount %s", sec, scraper)
	}
	one[corev1.ServiceAccount](t, objs, "ServiceAccount", scraper)
	crb := one[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", scraper)
	if crb.RoleRef.Name != fullname+"-metrics-reader" || len(crb.Subjects) != 1 || crb.Subjects[0].Name != scraper || crb.Subjects[0].Namespace != releaseNS {
		t.Errorf("scraper binding %+v: want metrics-reader for ServiceAccount %s/%s", crb, releaseNS, scraper)
	}

	rule := find(objs, "PrometheusRule", fullname)
	if rule == nil {
		t.Fatal("no PrometheusRule")
	}
	if rule.GetLabels()["release"] != "prometheus" {
		t.Errorf("PrometheusRule labels %v lack release: prometheus", rule.GetLabels())
	}
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if len(groups) != 1 {
		t.Errorf("PrometheusRule groups %v", groups)
	}
	dash := one[corev1.ConfigMap](t, objs, "ConfigMap", fullname+"-dashboard")
	wantDash, err := os.ReadFile(filepath.Join(chartDir, "files", "grafana-dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if dash.Labels["grafana_dashboard"] != "1" || dash.Data["mcp-catalog-operator.json"] != string(wantDash) {
		t.Errorf("dashboard ConfigMap: labels %v, or its JSON differs from files/grafana-dashboard.json", dash.Labels)
	}

	np := one[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", fullname)
	if !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}) {
		t.Errorf("policyTypes %v", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 1 || np.Spec.Ingress[0].From[0].NamespaceSelector == nil {
		t.Errorf("ingress %+v: want the metrics port from the monitoring namespace only", np.Spec.Ingress)
	}
	if len(np.Spec.Egress) != 2 {
		t.Errorf("egress %+v", np.Spec.Egress)
	}

	pdb := one[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", fullname)
	if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("PodDisruptionBudget minAvailable %v maxUnavailable %v", pdb.Spec.MinAvailable, pdb.Spec.MaxUnavailable)
	}
}

func checkPinnedGateway(t *testing.T, objs []*unstructured.Unstructured) {
	d, c := manager(t, objs)
	if want := "registry.example.com/platform/mcp-catalog-operator@" + testDigest; c.Image != want {
		t.Errorf("image %q, want %q (a digest wins over the tag)", c.Image, want)
	}
	if c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("pull policy %q", c.ImagePullPolicy)
	}
	if got, want := crdNames(objs), baseCRDNames(t); !slices.Equal(got, want) {
		t.Errorf("CRDs %v, want %v", got, want)
	}
	for _, o := range byKind(objs, "CustomResourceDefinition") {
		if _, ok := o.GetAnnotations()["helm.sh/resource-policy"]; ok {
			t.Errorf("CRD %s has helm.sh/resource-policy though crds.keep is false", o.GetName())
		}
	}

	if _, ok := containerPort(c, "gateway"); ok {
		t.Error("the manager container has a gateway port; the gateway runs in its own Deployment")
	}
	if f := flags(t, c); f["--components"] != "controllers" || f["--gateway-bind-address"] != "" {
		t.Errorf("manager flags %v: want --components=controllers and no gateway", f)
	}
	gd, gc := gatewayDeployment(t, objs)
	if gd == nil {
		t.Fatal("no gateway Deployment though gateway.enabled is true")
	}
	if gc.Image != c.Image {
		t.Errorf("gateway image %q, want the manager's %q", gc.Image, c.Image)
	}
	// The budgets set, and the defaults of the others, reach the gateway
	// as flags; a large burst is rendered as an integer the flag accepts.
	budgetFlags := flags(t, gc)
	for flag, want := range map[string]string{
		"--gateway-serviceaccount-rate": "2.5", "--gateway-serviceaccount-burst": "5000000", "--gateway-serviceaccount-concurrency": "8",
		"--gateway-namespace-rate": "400", "--gateway-namespace-burst": "800", "--gateway-namespace-concurrency": "256",
		"--gateway-list-ttl": "2m",
	} {
		if budgetFlags[flag] != want {
			t.Errorf("gateway flag %s=%q, want %q", flag, budgetFlags[flag], want)
		}
	}
	if p, ok := containerPort(gc, "gateway"); !ok || p != 9444 {
		t.Errorf("gateway container port %d (present %v), want 9444", p, ok)
	}
	svc := one[corev1.Service](t, objs, "Service", fullname+"-gateway")
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 9444 || svc.Spec.Ports[0].TargetPort.StrVal != "gateway" {
		t.Errorf("gateway Service ports %+v", svc.Spec.Ports)
	}

	f := flags(t, c)
	dir := f["--metrics-cert-dir"]
	if dir == "" {
		t.Fatal("no --metrics-cert-dir though metrics.certSecretName is set")
	}
	var mounted bool
	for _, m := range c.VolumeMounts {
		if m.MountPath == dir && m.ReadOnly {
			for _, v := range d.Spec.Template.Spec.Volumes {
				mounted = mounted || (v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "metrics-serving-cert")
			}
		}
	}
	if !mounted {
		t.Errorf("Secret metrics-serving-cert is not mounted read-only at %s", dir)
	}
	gf := flags(t, gc)
	if gf["--components"] != "gateway" || gf["--gateway-bind-address"] != ":9444" || gf["--gateway-audience"] != "agents.example.com" || gf["--gateway-stateless"] != "true" {
		t.Errorf("gateway flags: %v", gf)
	}
	if _, ok := gf["--leader-elect"]; ok {
		t.Error("the gateway is passed --leader-elect; it never elects")
	}
	if gf["--tracing-otlp-endpoint"] != "http://otel-collector.monitoring:4317" {
		t.Errorf("gateway --tracing-otlp-endpoint=%q, want gateway.tracing.otlpEndpoint", gf["--tracing-otlp-endpoint"])
	}
	if _, ok := f["--tracing-otlp-endpoint"]; ok {
		t.Error("the controllers are passed --tracing-otlp-endpoint; only the gateway traces")
	}
	var sampler, memLimit, gogc bool
	for _, e := range gc.Env {
		sampler = sampler || (e.Name == "OTEL_TRACES_SAMPLER" && e.Value == "parentbased_traceidratio")
		memLimit = memLimit || e.Name == "GOMEMLIMIT"
		gogc = gogc || (e.Name == "GOGC" && e.Value == "400")
	}
	if !sampler || !memLimit || !gogc {
		t.Errorf("gateway env %v: want gateway.tracing.env beside GOMEMLIMIT and GOGC=400 (gateway.gcPercent)", gc.Env)
	}
	if got := envValue(c, "GOGC"); got != "50" {
		t.Errorf("the controllers are given GOGC=%q, want the chart's gcPercent (50); gateway.gcPercent is the gateway's", got)
	}
	if gd.Spec.Template.Spec.ServiceAccountName != fullname+"-gateway" {
		t.Errorf("gateway ServiceAccount %q, want its own", gd.Spec.Template.Spec.ServiceAccountName)
	}
	if gd.Spec.Replicas == nil || *gd.Spec.Replicas != 2 {
		t.Errorf("gateway replicas %v, want the default 2", gd.Spec.Replicas)
	}
	gpdb := one[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", fullname+"-gateway")
	if gpdb.Spec.MinAvailable == nil || gpdb.Spec.MinAvailable.IntValue() != 1 || !selects(gpdb.Spec.Selector.MatchLabels, gd.Spec.Template.Labels) || selects(gpdb.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
		t.Errorf("gateway PodDisruptionBudget %+v: want minAvailable 1 over the gateway pods only", gpdb.Spec)
	}
	if !selects(svc.Spec.Selector, gd.Spec.Template.Labels) || selects(svc.Spec.Selector, d.Spec.Template.Labels) {
		t.Errorf("gateway Service selector %v: want the gateway pods only", svc.Spec.Selector)
	}
	if svc.Spec.SessionAffinity != corev1.ServiceAffinityNone {
		t.Errorf("gateway Service sessionAffinity %q, want None", svc.Spec.SessionAffinity)
	}
	wantAbsent(t, objs, "HorizontalPodAutoscaler")
	gwDir := gf["--gateway-cert-dir"]
	var gwMounted bool
	for _, m := range gc.VolumeMounts {
		if gwDir != "" && m.MountPath == gwDir && m.ReadOnly {
			for _, v := range gd.Spec.Template.Spec.Volumes {
				gwMounted = gwMounted || (v.Name == m.Name && v.Secret != nil && v.Secret.SecretName == "gateway-serving-cert")
			}
		}
	}
	if !gwMounted {
		t.Errorf("Secret gateway-serving-cert is not mounted read-only at the gateway's --gateway-cert-dir %q", gwDir)
	}
	if _, insecure := f["--gateway-insecure"]; insecure {
		t.Error("the chart must never serve the gateway without TLS")
	}
	if last := c.Args[len(c.Args)-1]; last != "--graceful-shutdown-timeout=20s" {
		t.Errorf("extraArgs not passed last: %q", last)
	}
}

func checkMetricsOff(t *testing.T, objs []*unstructured.Unstructured) {
	_, c := manager(t, objs)
	f := flags(t, c)
	if f["--metrics-bind-address"] != "0" {
		t.Errorf("--metrics-bind-address=%q, want 0 (off)", f["--metrics-bind-address"])
	}
	if _, ok := f["--metrics-secure"]; ok {
		t.Error("--metrics-secure passed with metrics off")
	}
	if f["--leader-elect"] != "false" {
		t.Errorf("--leader-elect=%q, want false", f["--leader-elect"])
	}
	if _, ok := containerPort(c, "metrics"); ok {
		t.Error("metrics container port with metrics off")
	}
	for _, name := range []string{fullname + "-metrics-auth", fullname + "-metrics-reader"} {
		if find(objs, "ClusterRole", name) != nil {
			t.Errorf("ClusterRole %s rendered with metrics off", name)
		}
	}
	if find(objs, "Service", fullname+"-metrics") != nil {
		t.Error("metrics Service rendered with metrics off")
	}
	if find(objs, "Role", fullname+"-leader-election") != nil {
		t.Error("leader-election Role rendered with leader election off")
	}
	np := one[networkingv1.NetworkPolicy](t, objs, "NetworkPolicy", fullname)
	if len(np.Spec.Ingress) != 0 || !slices.Equal(np.Spec.PolicyTypes, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}) {
		t.Errorf("with no port to serve the NetworkPolicy must deny all ingress and leave egress: %+v", np.Spec)
	}
}

// grants reports whether one rule grants all verbs on group/resource.
func grants(rules []rbacv1.PolicyRule, group, resource string, verbs ...string) bool {
	for _, r := range rules {
		if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) {
			ok := true
			for _, v := range verbs {
				ok = ok && slices.Contains(r.Verbs, v)
			}
			if ok {
				return true
			}
		}
	}
	return false
}

func ruleEqual(a, b rbacv1.PolicyRule) bool {
	return slices.Equal(a.APIGroups, b.APIGroups) && slices.Equal(a.Resources, b.Resources) &&
		slices.Equal(a.Verbs, b.Verbs) && slices.Equal(a.ResourceNames, b.ResourceNames) &&
		slices.Equal(a.NonResourceURLs, b.NonResourceURLs)
}

// chartMetadata is what the tests read from Chart.yaml.
type chartMetadata struct {
	Version    string
	AppVersion string
}

func chartMeta(t *testing.T) chartMetadata {
	t.Helper()
	m := readYAMLFile(t, chartDir+"/Chart.yaml")
	v, _ := m["version"].(string)
	av, _ := m["appVersion"].(string)
	if v == "" || av == "" {
		t.Fatal("Chart.yaml lacks version or appVersion")
	}
	return chartMetadata{Version: v, AppVersion: av}
}

// chartLabels are the labels the chart adds to every object.
func chartLabels(t *testing.T) map[string]string {
	meta := chartMeta(t)
	return map[string]string{
		"helm.sh/chart":                "mcp-catalog-operator-" + meta.Version,
		"app.kubernetes.io/name":       "mcp-catalog-operator",
		"app.kubernetes.io/instance":   releaseName,
		"app.kubernetes.io/version":    meta.AppVersion,
		"app.kubernetes.io/managed-by": "Helm",
		"app.kubernetes.io/part-of":    "mcp-catalog-operator",
	}
}

// checkGatewayScoped: with watchNamespaces set, the gateway reads only the
// watched namespaces but is still granted the cluster-scoped TokenReview and
// SubjectAccessReview (a RoleBinding cannot grant them); an autoscaler owns
// its replica count.
func checkGatewayScoped(t *testing.T, objs []*unstructured.Unstructured) {
	gd, gc := gatewayDeployment(t, objs)
	if gd == nil {
		t.Fatal("no gateway Deployment")
	}
	if gd.Spec.Replicas != nil {
		t.Errorf("gateway replicas %d set though the autoscaler owns them", *gd.Spec.Replicas)
	}
	if f := flags(t, gc); f["--watch-namespaces"] != "team-a,team-b" {
		t.Errorf("gateway --watch-namespaces=%q", f["--watch-namespaces"])
	}
	hpa := one[autoscalingv2.HorizontalPodAutoscaler](t, objs, "HorizontalPodAutoscaler", fullname+"-gateway")
	if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != gd.Name || ref.APIVersion != "apps/v1" {
		t.Errorf("autoscaler targets %+v, want the gateway Deployment", ref)
	}
	if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas != 3 || hpa.Spec.MaxReplicas != 7 {
		t.Errorf("autoscaler bounds %v..%d, want 3..7", hpa.Spec.MinReplicas, hpa.Spec.MaxReplicas)
	}
	if len(hpa.Spec.Metrics) != 1 || hpa.Spec.Metrics[0].Resource == nil || hpa.Spec.Metrics[0].Resource.Name != corev1.ResourceCPU {
		t.Errorf("autoscaler metrics %+v, want CPU", hpa.Spec.Metrics)
	}
	// The budget with an autoscaler needs no replicaCount of 2.
	one[policyv1.PodDisruptionBudget](t, objs, "PodDisruptionBudget", fullname+"-gateway")

	role := one[rbacv1.ClusterRole](t, objs, "ClusterRole", fullname+"-gateway")
	for _, res := range []string{"mcptools", "mcpservers", "mcpaccesspolicies", "mcpdelegationprofiles"} {
		if !grants(role.Rules, "mcp.catalog.dev", res, "get", "list", "watch") {
			t.Errorf("the gateway role does not grant get, list, watch on %s", res)
		}
	}
	// It writes Events, the McpCallApprovals of calls that wait for a
	// person (created, used through status, swept), the McpReadMarks of
	// the write-down rule (created and raised, never deleted: a reset is a
	// person's) and people's authorizations of per-person servers
	// (Secrets, created and replaced by name, never deleted, listed or
	// watched), and nothing else: no McpServer or McpTool status, which the
	// controllers own.
	writable := [][]string{{"events"}, {"mcpcallapprovals"}, {"mcpcallapprovals/status"}, {"mcpreadmarks"}, {"secrets"}}
	for _, r := range role.Rules {
		if slices.Equal(r.Resources, []string{"secrets"}) && slices.ContainsFunc(r.Verbs, func(v string) bool { return v != "get" && v != "create" && v != "update" }) {
			t.Errorf("the gateway role grants %v on Secrets; only get, create and update", r.Verbs)
		}
		for _, v := range r.Verbs {
			if !slices.Contains([]string{"get", "list", "watch", "create", "patch", "update", "delete"}, v) {
				t.Errorf("the gateway role grants %s on %v", v, r.Resources)
			}
		}
		writes := slices.ContainsFunc(r.Verbs, func(v string) bool { return v == "create" || v == "patch" || v == "update" || v == "delete" })
		if writes && !slices.ContainsFunc(writable, func(w []string) bool { return slices.Equal(r.Resources, w) }) {
			t.Errorf("the gateway role may write %v", r.Resources)
		}
	}
	if !grants(role.Rules, "mcp.catalog.dev", "mcpcallapprovals", "create", "delete") || !grants(role.Rules, "mcp.catalog.dev", "mcpcallapprovals/status", "update") {
		t.Error("the gateway role cannot create, use and sweep McpCallApprovals")
	}
	if !grants(role.Rules, "mcp.catalog.dev", "mcpreadmarks", "get", "list", "watch", "create", "update") || grants(role.Rules, "mcp.catalog.dev", "mcpreadmarks", "delete") {
		t.Error("the gateway role must read, create and raise McpReadMarks, and not delete them")
	}
	for _, ns := range []string{"team-a", "team-b"} {
		var rb *rbacv1.RoleBinding
		for _, u := range byKind(objs, "RoleBinding") {
			if u.GetNamespace() == ns && u.GetName() == fullname+"-gateway" {
				rb = convert[rbacv1.RoleBinding](t, u)
			}
		}
		if rb == nil || rb.RoleRef.Name != role.Name {
			t.Errorf("namespace %s: no RoleBinding of the gateway role", ns)
		}
	}
	if find(objs, "ClusterRoleBinding", fullname+"-gateway") != nil {
		t.Error("the gateway's read role is bound cluster-wide though watchNamespaces is set")
	}
	auth := one[rbacv1.ClusterRole](t, objs, "ClusterRole", fullname+"-gateway-auth")
	if !grants(auth.Rules, "authentication.k8s.io", "tokenreviews", "create") || !grants(auth.Rules, "authorization.k8s.io", "subjectaccessreviews", "create") {
		t.Errorf("gateway-auth rules %+v lack TokenReview or SubjectAccessReview create", auth.Rules)
	}
	crb := one[rbacv1.ClusterRoleBinding](t, objs, "ClusterRoleBinding", fullname+"-gateway-auth")
	if crb.RoleRef.Kind != "ClusterRole" || crb.RoleRef.Name != auth.Name || len(crb.Subjects) != 1 || crb.Subjects[0].Name != fullname+"-gateway" {
		t.Errorf("gateway-auth binding %+v, want the gateway ServiceAccount bound cluster-wide", crb)
	}
}

// checkPrivateCA: the extra volume, mount and environment reach the
// manager, beside the chart's own metrics certificate mount.
func checkPrivateCA(t *testing.T, objs []*unstructured.Unstructured) {
	d, c := manager(t, objs)
	var env string
	for _, e := range c.Env {
		if e.Name == "SSL_CERT_DIR" {
			env = e.Value
		}
	}
	if env != "/etc/ssl/corporate" {
		t.Errorf("SSL_CERT_DIR = %q, want /etc/ssl/corporate (env %+v)", env, c.Env)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	if m, ok := mounts["corporate-ca"]; !ok || m.MountPath != "/etc/ssl/corporate" || !m.ReadOnly {
		t.Errorf("corporate-ca mount %+v (present %v)", m, ok)
	}
	if _, ok := mounts["metrics-certs"]; !ok {
		t.Error("the extra mount displaced the metrics certificate mount")
	}
	vols := map[string]corev1.Volume{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		vols[v.Name] = v
	}
	if v, ok := vols["corporate-ca"]; !ok || v.ConfigMap == nil || v.ConfigMap.Name != "corporate-ca" {
		t.Errorf("corporate-ca volume %+v (present %v)", v, ok)
	}
	if _, ok := vols["metrics-certs"]; !ok {
		t.Error("the extra volume displaced the metrics certificate volume")
	}
}

// checkSharded: one controller Deployment per shard besides the default
// one, each selecting only its own objects and holding its own lease, and
// the default instance taking only what no shard is named on. A shard's
// Deployment selects only its own pods. (The default Deployment's selector
// stays as it was, since a selector cannot change on upgrade; it is a
// subset of a shard pod's labels, and the ReplicaSets' controller
// references keep the two apart.)
// checkTenancy: every tenancy and tool listener value reaches the manager
// as its flag.
func checkTenancy(t *testing.T, objs []*unstructured.Unstructured) {
	_, c := manager(t, objs)
	f := flags(t, c)
	for flag, want := range map[string]string{
		"--max-concurrent-servers-per-namespace":    "4",
		"--catalog-bytes-in-flight":                 "96Mi",
		"--max-catalog-bytes":                       "4Mi",
		"--max-tools":                               "500",
		"--max-operation-timeout":                   "30s",
		"--min-health-interval":                     "30s",
		"--max-tools-per-namespace":                 "5000",
		"--max-definition-bytes-per-namespace":      "64Mi",
		"--max-prompts-and-resources-per-namespace": "2000",
		"--listen-tool-changes":                     "false",
		"--max-tool-listeners":                      "64",
		"--max-tool-listeners-per-namespace":        "8",
		"--tool-change-debounce":                    "5s",
		"--tool-change-min-interval":                "1m",
	} {
		if got, ok := f[flag]; !ok || got != want {
			t.Errorf("%s=%q (set: %v), want %q", flag, got, ok, want)
		}
	}
}

func checkSharded(t *testing.T, objs []*unstructured.Unstructured) {
	d, c := manager(t, objs)
	// The webhook: every instance signs with the mounted key; only the
	// default instance notifies about call approvals, which every shard sees.
	if f := flags(t, c); f["--notify-webhook-url"] != "https://hooks.example.com/mcp" || f["--notify-webhook-key-file"] != "/etc/mcp-catalog-operator/notify/key" {
		t.Errorf("default instance: notification flags %v", f)
	} else if _, off := f["--notify-call-approvals"]; off {
		t.Error("the default instance does not notify about call approvals")
	}
	checkNotifyKey(t, d, c)
	if got := flags(t, c)["--watch-label-selector"]; got != "!sharding.mcp.catalog.dev/key" {
		t.Errorf("default instance: --watch-label-selector=%q, want every object without a shard key", got)
	}
	if _, ok := flags(t, c)["--leader-election-id"]; ok {
		t.Error("the default instance changed its lease name; an upgrade would run two leaders")
	}
	leases := map[string]bool{}
	for _, shard := range []string{"east", "west"} {
		sd := one[appsv1.Deployment](t, objs, "Deployment", fullname+"-shard-"+shard)
		cs := sd.Spec.Template.Spec.Containers
		if len(cs) != 1 {
			t.Fatalf("shard %s: %d containers", shard, len(cs))
		}
		f := flags(t, &cs[0])
		if got := f["--watch-label-selector"]; got != "sharding.mcp.catalog.dev/key="+shard {
			t.Errorf("shard %s: --watch-label-selector=%q", shard, got)
		}
		if f["--components"] != "controllers" {
			t.Errorf("shard %s: --components=%q, want controllers (a shard cannot serve the gateway)", shard, f["--components"])
		}
		if f["--notify-call-approvals"] != "false" || f["--notify-webhook-url"] == "" {
			t.Errorf("shard %s: notification flags %v, want the webhook without call approvals", shard, f)
		}
		checkNotifyKey(t, sd, &cs[0])
		id := f["--leader-election-id"]
		if id == "" || leases[id] {
			t.Errorf("shard %s: lease %q is empty or shared", shard, id)
		}
		leases[id] = true
		if selects(sd.Spec.Selector.MatchLabels, d.Spec.Template.Labels) {
			t.Errorf("shard %s selects the default instance's pods", shard)
		}
		if !selects(sd.Spec.Selector.MatchLabels, sd.Spec.Template.Labels) {
			t.Errorf("shard %s does not select its own pods", shard)
		}
		other := one[appsv1.Deployment](t, objs, "Deployment", fullname+"-shard-"+map[string]string{"east": "west", "west": "east"}[shard])
		if selects(sd.Spec.Selector.MatchLabels, other.Spec.Template.Labels) {
			t.Errorf("shard %s selects the pods of another shard", shard)
		}
	}
}

// checkNotifyKey checks that the notifications' HMAC key is mounted from
// its Secret where the manager reads it.
// checkWebhookURLFromSecret: a webhook URL that is itself a credential is
// read from the Secret's key, so it appears neither in the Deployment's
// arguments nor anywhere else in what the chart renders.
func checkWebhookURLFromSecret(t *testing.T, objs []*unstructured.Unstructured) {
	d, c := manager(t, objs)
	f := flags(t, c)
	if _, ok := f["--notify-webhook-url"]; ok {
		t.Errorf("the URL is in the arguments: %v", f)
	}
	if f["--notify-webhook-url-file"] != "/etc/mcp-catalog-operator/notify/url" || f["--notify-webhook-key-file"] != "/etc/mcp-catalog-operator/notify/key" {
		t.Errorf("notification flags %v, want the URL and the key read from the mounted Secret", f)
	}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Name != "notify-key" {
			continue
		}
		items := map[string]string{}
		for _, it := range v.Secret.Items {
			items[it.Key] = it.Path
		}
		if v.Secret.SecretName != "mcp-notify" || items["url"] != "url" || items["key"] != "key" {
			t.Errorf("the notify-key volume is %+v, want the Secret's url and key items", v)
		}
		return
	}
	t.Error("no notify-key volume")
}

func checkNotifyKey(t *testing.T, d *appsv1.Deployment, c *corev1.Container) {
	t.Helper()
	var vol *corev1.Volume
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == "notify-key" {
			vol = &d.Spec.Template.Spec.Volumes[i]
		}
	}
	if vol == nil || vol.Secret == nil || vol.Secret.SecretName != "mcp-notify" || len(vol.Secret.Items) != 1 || vol.Secret.Items[0].Key != "key" || vol.Secret.Items[0].Path != "key" {
		t.Fatalf("%s: the notify-key volume is %+v", d.Name, vol)
	}
	for _, m := range c.VolumeMounts {
		if m.Name == "notify-key" && m.MountPath == "/etc/mcp-catalog-operator/notify" && m.ReadOnly {
			return
		}
	}
	t.Errorf("%s: the notify key is not mounted read-only at /etc/mcp-catalog-operator/notify: %+v", d.Name, c.VolumeMounts)
}

// envValue is the value of the container's environment variable name; ""
// if it is unset.
func envValue(c *corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}

// The controllers run with the chart's gcPercent as GOGC, every shard too,
// beside GOMEMLIMIT; null leaves the runtime's default; the gateway keeps
// its own gateway.gcPercent.
func TestControllersGOGC(t *testing.T) {
	for _, tc := range []struct {
		name, values, want string
	}{
		{"default", "", "50"},
		{"set", "gcPercent: 200\nsharding:\n  shards: [east]\n", "200"},
		{"null", "gcPercent: null\n", ""},
		{"null without a memory limit", "gcPercent: null\nresources:\n  limits: {}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs := render(t, tc.values, floorKubeVersion)
			var deployments []*appsv1.Deployment
			for _, u := range byKind(objs, "Deployment") {
				if u.GetLabels()["app.kubernetes.io/component"] == "manager" {
					deployments = append(deployments, convert[appsv1.Deployment](t, u))
				}
			}
			if len(deployments) == 0 {
				t.Fatal("no controller Deployment rendered")
			}
			for _, d := range deployments {
				c := &d.Spec.Template.Spec.Containers[0]
				if got := envValue(c, "GOGC"); got != tc.want {
					t.Errorf("%s: GOGC=%q, want %q", d.Name, got, tc.want)
				}
				if c.Resources.Limits.Memory().IsZero() {
					continue
				}
				wantMemoryLimitEnv(t, c)
			}
			if tc.name == "set" && len(deployments) != 2 {
				t.Errorf("%d controller Deployments, want the default instance and shard east", len(deployments))
			}
			if _, gc := gatewayDeployment(t, objs); gc != nil && envValue(gc, "GOGC") != "400" {
				t.Errorf("gateway GOGC=%q, want its own gateway.gcPercent (400)", envValue(gc, "GOGC"))
			}
		})
	}
}
