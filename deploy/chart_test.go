package deploy_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"sigs.k8s.io/yaml"
)

const chartDir = "helm/toolsvc"

// The value sets the chart is rendered with: the smallest install, a
// fleet with everything turned on, and SQLite on a volume.
var chartCases = []struct {
	name   string
	values string
}{
	{"one replica on SQLite", `
auth: {existingSecret: toolsvc-auth, key: auth.yaml}
`},
	{"fleet with everything", `
replicaCount: 3
auth: {existingSecret: toolsvc-auth, key: auth.yaml}
postgres: {existingSecret: toolsvc-db, key: url}
redis: {existingSecret: toolsvc-redis, key: url}
knowledge: {configMap: toolsvc-knowledge, companyWide: true}
upstreams: {configMap: toolsvc-upstreams, key: upstreams.yaml}
tls: {secretName: toolsvc-tls, clientCASecret: toolsvc-client-ca}
metrics: {serviceMonitor: {enabled: true, labels: {release: prometheus}}}
shutdown: {drainSeconds: 15, graceSeconds: 30}
extraArgs: [--sync-interval=1h, --audit-retention=2160h]
extraEnv: [{name: TOOLSVC_OTLP_ENDPOINT, value: "http://otel-collector:4318"}]
`},
	{"SQLite on a volume, knowledge from a claim", `
auth: {existingSecret: toolsvc-auth, key: auth.yaml}
persistence: {enabled: true, size: 5Gi}
knowledge: {volume: {persistentVolumeClaim: {claimName: knowledge, readOnly: true}}}
metrics: {enabled: false}
`},
}

// TestChartLints runs helm lint (the code of `helm lint --strict`) over
// each value set: no warning and no error.
func TestChartLints(t *testing.T) {
	for _, tc := range chartCases {
		t.Run(tc.name, func(t *testing.T) {
			linter := lint.All(chartDir, parseValues(t, tc.values), "tools", false)
			for _, m := range linter.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				} else {
					t.Logf("helm lint: %s", m)
				}
			}
		})
	}
}

// TestChartRendersValidObjects renders the chart as `helm template` does
// and decodes every document strictly into its Kubernetes type: a field
// the API does not have, or a value of the wrong type, fails here (what
// `kubectl apply --dry-run=client` would refuse). Then it checks what
// makes the objects work together: selectors, ports, volumes, probes, the
// shutdown timing, the security context, and that every flag the pods
// pass exists in `toolsvc serve -h`.
func TestChartRendersValidObjects(t *testing.T) {
	for _, tc := range chartCases {
		t.Run(tc.name, func(t *testing.T) {
			vals := parseValues(t, tc.values)
			objs := render(t, vals)
			var dep *appsv1.Deployment
			services := map[string]*corev1.Service{}
			var pdb *policyv1.PodDisruptionBudget
			var sm *monitoringv1.ServiceMonitor
			for _, o := range objs {
				switch o.kind {
				case "Deployment":
					dep = decode[appsv1.Deployment](t, o)
				case "Service":
					s := decode[corev1.Service](t, o)
					services[s.Name] = s
				case "PodDisruptionBudget":
					pdb = decode[policyv1.PodDisruptionBudget](t, o)
				case "ServiceAccount":
					decode[corev1.ServiceAccount](t, o)
				case "PersistentVolumeClaim":
					decode[corev1.PersistentVolumeClaim](t, o)
				case "ServiceMonitor":
					sm = decode[monitoringv1.ServiceMonitor](t, o)
				default:
					t.Errorf("%s: kind %s/%s not checked by this test", o.source, o.apiVersion, o.kind)
				}
			}
			if dep == nil || len(services) == 0 || pdb == nil {
				t.Fatalf("want a Deployment, a Service and a PodDisruptionBudget; got %d objects", len(objs))
			}
			checkDeployment(t, vals, dep)
			pod := dep.Spec.Template.Labels
			for name, s := range services {
				if !subset(s.Spec.Selector, pod) {
					t.Errorf("Service %s selects %v, not the pods %v", name, s.Spec.Selector, pod)
				}
				for _, p := range s.Spec.Ports {
					if !hasPort(dep, p.TargetPort.String()) {
						t.Errorf("Service %s targets port %s, which the container does not name", name, p.TargetPort.String())
					}
				}
			}
			if !subset(pdb.Spec.Selector.MatchLabels, pod) {
				t.Errorf("PodDisruptionBudget selects %v, not the pods %v", pdb.Spec.Selector.MatchLabels, pod)
			}
			wantSM := tc.name == "fleet with everything"
			if (sm != nil) != wantSM {
				t.Fatalf("ServiceMonitor rendered: %v, want %v", sm != nil, wantSM)
			}
			if sm != nil {
				matched := false
				for _, s := range services {
					if subset(sm.Spec.Selector.MatchLabels, s.Labels) {
						matched = true
						if len(sm.Spec.Endpoints) != 1 || !slices.ContainsFunc(s.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == sm.Spec.Endpoints[0].Port }) {
							t.Errorf("ServiceMonitor scrapes port %v, which Service %s does not have", sm.Spec.Endpoints, s.Name)
						}
					}
				}
				if !matched {
					t.Errorf("ServiceMonitor selects %v: no Service has those labels", sm.Spec.Selector.MatchLabels)
				}
			}
		})
	}
}

func checkDeployment(t *testing.T, vals map[string]any, dep *appsv1.Deployment) {
	t.Helper()
	spec := dep.Spec.Template.Spec
	if !subset(dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels) {
		t.Errorf("Deployment selector %v does not select its pods %v", dep.Spec.Selector.MatchLabels, dep.Spec.Template.Labels)
	}
	if len(spec.Containers) != 1 {
		t.Fatalf("want one container, got %d", len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Args) == 0 || c.Args[0] != "serve" {
		t.Fatalf("container args %q: want serve first", c.Args)
	}

	// Every flag and TOOLSVC_ variable names a flag of toolsvc serve.
	var env []string
	for _, e := range c.Env {
		env = append(env, e.Name)
	}
	checkFlags(t, "the chart", append(argFlags(t, "the chart", c.Args[1:]), envFlags(env)...))
	args := map[string]string{}
	for _, a := range c.Args[1:] {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		args[k] = v
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "TOOLSVC_") && e.Value != "" && (e.Name == "TOOLSVC_DB" || e.Name == "TOOLSVC_REDIS") {
			t.Errorf("%s carries a literal value: connection URLs come from Secrets", e.Name)
		}
	}
	if args["auth-file"] == "" {
		t.Error("no --auth-file: the pods listen on every interface")
	}
	// The auth file reloads without a restart (docs/OPERATIONS.md
	// "Reloading"): its volume is mounted as a directory, never by
	// subPath, which kubelet would never update.
	for _, m := range c.VolumeMounts {
		if m.Name == "auth" && (m.SubPath != "" || !strings.HasPrefix(args["auth-file"], m.MountPath+"/")) {
			t.Errorf("auth mount %+v: want the directory of --auth-file=%s, without subPath", m, args["auth-file"])
		}
	}
	if args["auth-poll"] == "" {
		t.Error("no --auth-poll: the chart should state how often pods check the auth file")
	}

	// Shutdown: the kubelet's SIGKILL comes after the drain delay and the
	// grace period, with room to close the stores.
	sd, err := chartutil.Values(vals).Table("shutdown")
	if err != nil {
		t.Fatal(err)
	}
	drain, grace := seconds(sd, "drainSeconds", 5), seconds(sd, "graceSeconds", 10)
	if args["shutdown-drain"] != fmt.Sprintf("%ds", drain) || args["shutdown-grace"] != fmt.Sprintf("%ds", grace) {
		t.Errorf("--shutdown-drain=%s --shutdown-grace=%s: want %ds and %ds from the values", args["shutdown-drain"], args["shutdown-grace"], drain, grace)
	}
	if tg := spec.TerminationGracePeriodSeconds; tg == nil || *tg <= drain+grace {
		t.Errorf("terminationGracePeriodSeconds %v: want more than drain %d + grace %d", tg, drain, grace)
	}

	// Probes: ready on /readyz, alive on /healthz, on a named port.
	for name, p := range map[string]*corev1.Probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
		want := map[string]string{"readiness": "/readyz", "liveness": "/healthz"}[name]
		if p == nil || p.HTTPGet == nil || p.HTTPGet.Path != want {
			t.Errorf("%s probe %+v: want GET %s", name, p, want)
			continue
		}
		if !hasPort(dep, p.HTTPGet.Port.String()) {
			t.Errorf("%s probe on port %s, which the container does not name", name, p.HTTPGet.Port.String())
		}
		wantScheme := corev1.URISchemeHTTP
		if args["tls-cert"] != "" {
			wantScheme = corev1.URISchemeHTTPS
		}
		if p.HTTPGet.Scheme != wantScheme {
			t.Errorf("%s probe scheme %s: want %s", name, p.HTTPGet.Scheme, wantScheme)
		}
	}

	// Non-root, read-only root file system: writable only where mounted.
	psc, sc := spec.SecurityContext, c.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot || psc.RunAsUser == nil || *psc.RunAsUser != 65532 {
		t.Errorf("pod security context %+v: want runAsNonRoot and user 65532", psc)
	}
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container security context %+v: want a read-only root and no privilege escalation", sc)
	}
	if sc != nil && (sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL")) {
		t.Errorf("container capabilities %+v: want ALL dropped", sc.Capabilities)
	}

	// Every mount has its volume; every file flag points into a mount;
	// the database (SQLite) and /tmp are writable.
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		if !volumes[m.Name] {
			t.Errorf("mount %s of a volume the pod does not have", m.Name)
		}
		mounts[m.MountPath] = m
	}
	for _, flag := range []string{"auth-file", "knowledge-dir", "upstreams", "tls-cert", "tls-key", "tls-client-ca", "db"} {
		p := args[flag]
		if p == "" || strings.Contains(p, "://") {
			continue
		}
		m, ok := mountOf(mounts, p)
		if !ok {
			t.Errorf("--%s=%s is on the read-only root file system, in no mount", flag, p)
			continue
		}
		if flag == "db" && m.ReadOnly {
			t.Errorf("--db=%s is in a read-only mount", p)
		}
	}
	if m, ok := mounts["/tmp"]; !ok || m.ReadOnly {
		t.Error("/tmp is not a writable mount")
	}

	// A fleet rolls one new pod at a time with no capacity lost; SQLite
	// stops the old pod first (one writer per file).
	if *dep.Spec.Replicas > 1 {
		ru := dep.Spec.Strategy.RollingUpdate
		if dep.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru == nil || ru.MaxUnavailable.IntValue() != 0 {
			t.Errorf("fleet strategy %+v: want RollingUpdate with maxUnavailable 0", dep.Spec.Strategy)
		}
	} else if args["db"] != "" && dep.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("SQLite strategy %s: want Recreate", dep.Spec.Strategy.Type)
	}
	if c.Resources.Requests.Memory().IsZero() || c.Resources.Limits.Memory().IsZero() {
		t.Errorf("resources %+v: want a memory request and limit", c.Resources)
	}
}

// TestChartRefusesWhatCannotWork: a configuration that cannot work fails
// the render with its reason (the chart's fail, or the values schema).
func TestChartRefusesWhatCannotWork(t *testing.T) {
	tests := []struct {
		name, values, want string
	}{
		{"no auth file", `{}`, "auth.existingSecret is required"},
		{"an auth file from two places", `{auth: {existingSecret: a, configMap: b, key: auth.yaml}}`, "mutually exclusive"},
		{"a fleet on SQLite", `{replicaCount: 3, auth: {existingSecret: a, key: auth.yaml}, redis: {existingSecret: r, key: url}}`, "needs postgres.existingSecret"},
		{"a fleet without Redis", `{replicaCount: 2, auth: {existingSecret: a, key: auth.yaml}, postgres: {existingSecret: p, key: url}}`, "needs redis.existingSecret"},
		{"mutual TLS without a certificate", `{auth: {existingSecret: a, key: auth.yaml}, tls: {clientCASecret: ca}}`, "needs tls.secretName"},
		{"a misspelt key", `{auth: {existingSecret: a, key: auth.yaml}, replicas: 3}`, "replicas"},
		{"a drain that is not seconds", `{auth: {existingSecret: a, key: auth.yaml}, shutdown: {drainSeconds: "5s", graceSeconds: 10}}`, "drainSeconds"},
		{"an extra arg that is not a flag", `{auth: {existingSecret: a, key: auth.yaml}, extraArgs: ["rm -rf"]}`, "extraArgs"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderErr(t, parseValues(t, tt.values))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("render: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

type object struct {
	source, apiVersion, kind string
	doc                      []byte
}

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func parseValues(t *testing.T, s string) map[string]any {
	t.Helper()
	v, err := chartutil.ReadValues([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// renderErr renders the chart as `helm template --namespace tools
// toolsvc` does: values coalesced with the chart's, checked against
// values.schema.json, then the templates.
func renderErr(t *testing.T, vals map[string]any) ([]object, error) {
	t.Helper()
	ch := loadChart(t)
	rv, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: "toolsvc", Namespace: "tools", IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(ch, rv)
	if err != nil {
		return nil, err
	}
	if coalesced, ok := rv["Values"].(chartutil.Values); ok {
		maps.Copy(vals, coalesced)
	}
	var objs []object
	for _, name := range slices.Sorted(maps.Keys(out)) {
		if strings.HasSuffix(name, "NOTES.txt") {
			continue
		}
		for i, doc := range strings.Split(out[name], "\n---") {
			var head struct {
				APIVersion string `json:"apiVersion"`
				Kind       string `json:"kind"`
			}
			if err := yaml.Unmarshal([]byte(doc), &head); err != nil {
				return nil, fmt.Errorf("%s #%d: %w\n%s", name, i, err, doc)
			}
			if head.Kind == "" {
				if strings.TrimSpace(stripComments(doc)) != "" {
					return nil, fmt.Errorf("%s #%d: a document without a kind:\n%s", name, i, doc)
				}
				continue
			}
			objs = append(objs, object{source: fmt.Sprintf("%s #%d", name, i), apiVersion: head.APIVersion, kind: head.Kind, doc: []byte(doc)})
		}
	}
	return objs, nil
}

func render(t *testing.T, vals map[string]any) []object {
	t.Helper()
	objs, err := renderErr(t, vals)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

// decode decodes o strictly into T: unknown or duplicated fields and
// wrong types are errors.
func decode[T any](t *testing.T, o object) *T {
	t.Helper()
	v := new(T)
	if err := yaml.UnmarshalStrict(o.doc, v); err != nil {
		t.Errorf("%s: not a valid %s: %v\n%s", o.source, o.kind, err, o.doc)
	}
	return v
}

func stripComments(doc string) string {
	var b strings.Builder
	for line := range strings.Lines(doc) {
		if !strings.HasPrefix(strings.TrimSpace(line), "#") {
			b.WriteString(line)
		}
	}
	return b.String()
}

func subset(sel, labels map[string]string) bool {
	if len(sel) == 0 {
		return false
	}
	for k, v := range sel {
		if labels[k] != v {
			return false
		}
	}
	return true
}

func hasPort(dep *appsv1.Deployment, name string) bool {
	for _, p := range dep.Spec.Template.Spec.Containers[0].Ports {
		if p.Name == name {
			return true
		}
	}
	return false
}

func mountOf(mounts map[string]corev1.VolumeMount, path string) (corev1.VolumeMount, bool) {
	for mp, m := range mounts {
		mp = strings.TrimSuffix(mp, "/")
		if path == mp || strings.HasPrefix(path, mp+"/") {
			return m, true
		}
	}
	return corev1.VolumeMount{}, false
}

func seconds(m chartutil.Values, key string, def int64) int64 {
	switch v := m[key].(type) {
	case int64:
		return v
	case float64:
		return int64(v)
	case int:
		return int64(v)
	}
	return def
}
