package k8s

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// breakage is one deliberate mistake in a copy of the manifests and the
// problem the checks must report for it.
type breakage struct {
	name string
	file string // under this directory
	old  string // must occur exactly once in file
	new  string
	// also are further edits the same mistake needs (an overlay that would
	// otherwise stop kustomize before the checks run).
	also []edit
	// overlays that must report want. A mistake in the base shows in both;
	// checking prod alone keeps the test fast.
	overlays []string
	want     string
	alsoWant []string
}

type edit struct{ file, old, new string }

var breakages = []breakage{
	{
		name:     "front door in clear",
		file:     "overlays/prod/gateway-https.yaml",
		old:      "    protocol: HTTPS",
		new:      "    protocol: HTTP",
		overlays: []string{"prod"},
		want:     "Gateway/agentruntime listener grpc: does not terminate TLS (protocol HTTP)",
	},
	{
		name:     "services in clear in prod",
		file:     "overlays/prod/kustomization.yaml",
		old:      "      - AR_TLS_CERT=/etc/agentruntime/tls/tls.crt\n      - AR_TLS_KEY=/etc/agentruntime/tls/tls.key\n",
		new:      "",
		overlays: []string{"prod"},
		want:     "Deployment/agentruntime-control: AR_TLS_CERT is not set: the service would take credentials in clear",
	},
	{
		name:     "TLS on the probed port",
		file:     "overlays/prod/kustomization.yaml",
		old:      "      - AR_HEALTH_LISTEN=:7071\n",
		new:      "",
		overlays: []string{"prod"},
		want:     "Deployment/agentruntime-control: startupProbe probes port 7071, want the gRPC port 7070",
	},
	{
		name:     "Gateway to a service without backend TLS",
		file:     "overlays/prod/backend-tls.yaml",
		old:      "      name: agentruntime-evidence\n",
		new:      "      name: agentruntime-evidenc\n",
		overlays: []string{"prod"},
		want:     "Service/agentruntime-evidence: serves TLS, but no BackendTLSPolicy tells the Gateway",
	},
	{
		name:     "front door certificate for another name",
		file:     "overlays/prod/gateway-tls.yaml",
		old:      "    - agentruntime.example.com",
		new:      "    - runtime.example.com",
		overlays: []string{"prod"},
		want:     "Certificate/agentruntime-gateway: is not issued for agentruntime.example.com",
	},
	{
		name:     "route to a missing Service",
		file:     "base/gateway/gateway.yaml",
		old:      "        - name: agentruntime-tasks\n          port: 7070",
		new:      "        - name: agentruntime-taks\n          port: 7070",
		want:     "GRPCRoute/agentruntime-tasks: routes to Service agentruntime-taks, which does not exist",
		alsoWant: []string{"agentruntime.tasks.v1.TasksService is routed to [], want [agentruntime-tasks]"},
	},
	{
		name: "route for a gRPC service that does not exist",
		file: "base/gateway/gateway.yaml",
		old:  "service: agentruntime.routing.v1.RoutingService",
		new:  "service: agentruntime.routing.v1.RouteService",
		want: `GRPCRoute/agentruntime-routing: matches gRPC service "agentruntime.routing.v1.RouteService", which no agentruntime service serves`,
	},
	{
		name: "route to a port the Service lacks",
		file: "base/gateway/gateway.yaml",
		old:  "        - name: agentruntime-evidence\n          port: 7070",
		new:  "        - name: agentruntime-evidence\n          port: 7071",
		want: "GRPCRoute/agentruntime-evidence: routes to Service agentruntime-evidence on port 7071, which it does not have",
	},
	{
		name: "health checks of a service sent elsewhere",
		file: "base/gateway/gateway.yaml",
		old:  "              value: permission",
		new:  "              value: permision",
		want: "health checks of permission (header agentruntime-service: permission) go to [], want [agentruntime-permission]",
	},
	{
		name: "unknown field in a route",
		file: "base/gateway/gateway.yaml",
		old:  "  name: agentruntime-control\n  labels:",
		new:  "  name: agentruntime-control\n  label: {}\n  labels:",
		want: `GRPCRoute/agentruntime-control: strict decoding error: unknown field "metadata.label"`,
	},
	{
		name: "unknown field",
		file: "base/agentruntime/control.yaml",
		old:  "spec:\n  # No replicas here",
		new:  "spec:\n  replica: 2\n  # No replicas here",
		want: `unknown field "spec.replica"`,
	},
	{
		name: "misspelt container field",
		file: "base/nats/nats.yaml",
		old:  "readOnlyRootFilesystem: true",
		new:  "readOnlyRootFileSystem: true",
		want: `StatefulSet/nats: strict decoding error: unknown field "spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem"`,
	},
	{
		name: "probe port is not the container port",
		file: "base/agentruntime/tasks.yaml",
		old:  "readinessProbe:\n            grpc:\n              port: 7070",
		new:  "readinessProbe:\n            grpc:\n              port: 7079",
		// prod probes the health port (overlays/prod/agentruntime-tls-patch.yaml).
		overlays: []string{"dev"},
		want:     "Deployment/agentruntime-tasks: container agentruntime: readinessProbe port 7079 is not a port of the container",
	},
	{
		name: "named probe port the container lacks",
		file: "base/otel-collector/otel-collector.yaml",
		old:  "readinessProbe:\n            httpGet:\n              path: /\n              port: health",
		new:  "readinessProbe:\n            httpGet:\n              path: /\n              port: healthz",
		want: "Deployment/otel-collector: container otel-collector: readinessProbe port healthz is not a port of the container",
	},
	{
		name: "probe asks another service's health",
		file: "base/agentruntime/routing.yaml",
		old:  "readinessProbe:\n            grpc:\n              port: 7070\n              service: agentruntime.routing.v1.RoutingService",
		new:  "readinessProbe:\n            grpc:\n              port: 7070\n              service: agentruntime.control.v1.ControlService",
		want: `Deployment/agentruntime-routing: readinessProbe asks for health "agentruntime.control.v1.ControlService", want "agentruntime.routing.v1.RoutingService"`,
	},
	{
		name: "liveness follows readiness",
		file: "base/agentruntime/routing.yaml",
		old:  "livenessProbe:\n            grpc:\n              port: 7070\n              # the process (\"\"), not the service: a service whose read\n              # models fail or lag is not ready, yet alive and recovering\n              service: \"\"",
		new:  "livenessProbe:\n            grpc:\n              port: 7070\n              service: agentruntime.routing.v1.RoutingService",
		want: `Deployment/agentruntime-routing: livenessProbe asks for health "agentruntime.routing.v1.RoutingService", want the process's ("")`,
	},
	{
		name: "latest image",
		file: "base/nats/nats.yaml",
		old:  "image: nats:2.15.2-alpine",
		new:  "image: nats:latest",
		want: `StatefulSet/nats: container nats: image "nats:latest" uses the floating tag latest`,
	},
	{
		name: "untagged image",
		file: "base/redis/redis.yaml",
		old:  "image: redis:7.4.9-alpine",
		new:  "image: redis",
		want: `StatefulSet/redis: container redis: image "redis" has no tag or digest`,
	},
	{
		name: "missing memory limit",
		file: "base/agentruntime/permission.yaml",
		old:  "limits:\n              cpu: \"1\"\n              memory: 512Mi",
		new:  "limits:\n              cpu: \"1\"",
		want: "Deployment/agentruntime-permission: container agentruntime: no memory limit",
	},
	{
		name: "writable root filesystem",
		file: "base/agentruntime/control.yaml",
		old:  "readOnlyRootFilesystem: true",
		new:  "readOnlyRootFilesystem: false",
		want: "Deployment/agentruntime-control: container agentruntime: readOnlyRootFilesystem is not true",
	},
	{
		name: "one service drifts from the others",
		file: "base/agentruntime/routing.yaml",
		old:  "terminationGracePeriodSeconds: 30",
		new:  "terminationGracePeriodSeconds: 45",
		want: "Deployment/agentruntime-routing: differs from Deployment/agentruntime-control beyond its name, at .spec.template.spec.terminationGracePeriodSeconds",
	},
	{
		name: "privilege escalation",
		file: "base/otel-collector/otel-collector.yaml",
		old:  "allowPrivilegeEscalation: false",
		new:  "allowPrivilegeEscalation: true",
		want: "Deployment/otel-collector: container otel-collector: allowPrivilegeEscalation is not false",
	},
	{
		name: "capabilities kept",
		file: "base/redis/redis.yaml",
		old:  "drop: [ALL]",
		new:  "drop: [NET_RAW]",
		want: "StatefulSet/redis: container redis: does not drop ALL capabilities",
	},
	{
		name: "pod may run as root",
		file: "base/nats/nats.yaml",
		old:  "runAsNonRoot: true\n        runAsUser: 1000",
		new:  "runAsNonRoot: false\n        runAsUser: 1000",
		want: "StatefulSet/nats: pod securityContext.runAsNonRoot is not true",
	},
	{
		name: "selector does not match the template",
		file: "base/agentruntime/evidence.yaml",
		old:  "    metadata:\n      labels:\n        app.kubernetes.io/name: agentruntime\n        app.kubernetes.io/component: evidence",
		new:  "    metadata:\n      labels:\n        app.kubernetes.io/name: agentruntime\n        app.kubernetes.io/component: evidences",
		want: "Deployment/agentruntime-evidence: selector app.kubernetes.io/component=evidence,app.kubernetes.io/name=agentruntime does not match its pod template's labels",
	},
	{
		name: "Service selects no pods",
		file: "base/agentruntime/permission.yaml",
		old:  "    app.kubernetes.io/component: permission\n  ports:",
		new:  "    app.kubernetes.io/component: permision\n  ports:",
		want: "Service/agentruntime-permission: selector map[app.kubernetes.io/component:permision app.kubernetes.io/name:agentruntime] matches no pod template",
	},
	{
		name: "Service targets a port the pods lack",
		file: "base/redis/redis.yaml",
		old:  "    - name: redis\n      port: 6379\n      targetPort: redis\n      protocol: TCP\n---\n# The StatefulSet's",
		new:  "    - name: redis\n      port: 6379\n      targetPort: 6380\n      protocol: TCP\n---\n# The StatefulSet's",
		want: "Service/redis: port redis targets 6380, which StatefulSet/redis does not expose",
	},
	{
		name: "service without a Service",
		file: "base/agentruntime/control.yaml",
		old:  "kind: Service\nmetadata:\n  name: agentruntime-control",
		new:  "kind: Service\nmetadata:\n  name: agentruntime-ctl",
		want: "service control: has no Service agentruntime-control",
	},
	{
		name: "service without a Deployment",
		file: "base/agentruntime/kustomization.yaml",
		old:  "  - tasks.yaml\n",
		new:  "",
		also: []edit{
			{"overlays/dev/kustomization.yaml", "  - name: agentruntime-tasks\n    count: 1\n", ""},
		},
		overlays: []string{"dev"},
		want:     "service tasks: has no Deployment agentruntime-tasks",
	},
	{
		name: "no NATS",
		file: "base/kustomization.yaml",
		old:  "  - nats\n",
		new:  "",
		also: []edit{
			{"overlays/prod/kustomization.yaml", "  - path: nats-anti-affinity.yaml\n", ""},
		},
		want: "NATS: no StatefulSet runs the nats image",
	},
	{
		name:     "no Redis",
		file:     "base/kustomization.yaml",
		old:      "  - redis\n",
		new:      "",
		overlays: []string{"dev"},
		want:     "Redis: no StatefulSet runs the redis image",
	},
	{
		name: "NATS open to every pod",
		file: "base/network-policies.yaml",
		old:  "    # Clients: the agentruntime services only.\n    - from:\n        - podSelector:\n            matchLabels:\n              app.kubernetes.io/name: agentruntime\n      ports:\n        - port: client",
		new:  "    - ports:\n        - port: client",
		want: "StatefulSet/nats: port 4222 (client) is open beyond the agentruntime services",
	},
	{
		name: "Redis reachable by NATS",
		file: "base/network-policies.yaml",
		old:  "              app.kubernetes.io/name: agentruntime\n      ports:\n        - port: redis",
		new:  "              app.kubernetes.io/part-of: agentruntime\n      ports:\n        - port: redis",
		want: "StatefulSet/redis: port 6379 (redis) admits",
	},
	{
		name: "no default deny",
		file: "base/network-policies.yaml",
		old:  "  podSelector: {}\n  policyTypes: [Ingress]\n",
		new:  "  podSelector: {}\n  policyTypes: [Egress]\n",
		want: "NetworkPolicy: no default deny of ingress in the namespace",
	},
	{
		name: "NATS too old for atomic batches",
		file: "base/nats/nats.yaml",
		old:  "image: nats:2.15.2-alpine",
		new:  "image: nats:2.10.22-alpine",
		want: `nats image "2.10.22-alpine" is older than 2.12`,
	},
	{
		name:     "stream replicas above the servers",
		file:     "overlays/dev/kustomization.yaml",
		old:      "- AR_REPLICAS=1",
		new:      "- AR_REPLICAS=3",
		overlays: []string{"dev"},
		want:     "AR_REPLICAS 3 exceeds the 1 NATS server(s)",
	},
	{
		name: "misspelt AR variable",
		file: "base/agentruntime/kustomization.yaml",
		old:  "- AR_LOG_LEVEL=info",
		new:  "- AR_LOGLEVEL=info",
		want: "Deployment/agentruntime-control: AR_LOGLEVEL is not a flag of agentruntime serve",
	},
	{
		name: "NATS URL to a port no Service has",
		file: "base/agentruntime/kustomization.yaml",
		old:  "AR_NATS=nats://nats:4222",
		new:  "AR_NATS=nats://nats:4223",
		want: `AR_NATS "nats://nats:4223": Service nats has no port 4223`,
	},
	{
		name: "auth file outside the Secret",
		file: "base/agentruntime/kustomization.yaml",
		old:  "AR_AUTH=/etc/agentruntime/auth/auth.yaml",
		new:  "AR_AUTH=/etc/agentruntime/auth.yaml",
		want: "AR_AUTH /etc/agentruntime/auth.yaml is not in a mounted Secret",
	},
	{
		name: "shutdown longer than the grace period",
		file: "base/agentruntime/kustomization.yaml",
		old:  "AR_SHUTDOWN_TIMEOUT=20s",
		new:  "AR_SHUTDOWN_TIMEOUT=30s",
		want: "preStop pause plus AR_SHUTDOWN_TIMEOUT (35s) does not fit in terminationGracePeriodSeconds (30s)",
	},
	{
		name:     "nats.conf key the server does not know",
		file:     "base/nats/nats.conf",
		old:      "max_payload: 8MB",
		new:      "max_paylod: 8MB",
		overlays: []string{"prod"},
		want:     `StatefulSet/nats: nats-server refuses /etc/nats/nats.conf`,
	},
	{
		name:     "cluster route missing",
		file:     "base/nats/nats.conf",
		old:      "    nats://nats-2.nats-headless:6222\n",
		new:      "",
		overlays: []string{"prod"},
		want:     "StatefulSet/nats: cluster routes [nats-0.nats-headless:6222 nats-1.nats-headless:6222], want one per pod",
	},
	{
		name:     "single server configured as a cluster",
		file:     "overlays/dev/kustomization.yaml",
		old:      "  - name: nats-config\n    behavior: replace\n    files:\n      - nats.conf\n",
		new:      "",
		overlays: []string{"dev"},
		want:     "StatefulSet/nats: one server with routes to 3",
	},
	{
		name:     "JetStream not on the volume",
		file:     "base/nats/nats.conf",
		old:      "store_dir: /data/jetstream",
		new:      "store_dir: /tmp/jetstream",
		overlays: []string{"prod"},
		want:     `StatefulSet/nats: JetStream store_dir "/tmp/jetstream" is not on a persistent volume claim`,
	},
	{
		name:     "too few production replicas",
		file:     "overlays/prod/agentruntime-three-replicas.yaml",
		old:      "minReplicas: 3",
		new:      "minReplicas: 2",
		overlays: []string{"prod"},
		want:     "Deployment/agentruntime-control: runs 2 replica(s), want 3 to 100",
		alsoWant: []string{"PodDisruptionBudget/agentruntime-control: minAvailable 2 with 2 replica(s) of Deployment/agentruntime-control blocks every node drain"},
	},
	{
		name:     "a production budget that lets a drain leave one pod",
		file:     "overlays/prod/agentruntime-disruption-budget.yaml",
		old:      "minAvailable: 2",
		new:      "minAvailable: 1",
		overlays: []string{"prod"},
		want:     "Deployment/agentruntime-tasks: PodDisruptionBudget agentruntime-tasks keeps 1 pod(s) through a drain, want at least 2",
	},
	{
		name:     "no NATS anti-affinity in production",
		file:     "overlays/prod/kustomization.yaml",
		old:      "  - path: nats-anti-affinity.yaml\n",
		new:      "",
		overlays: []string{"prod"},
		want:     "StatefulSet/nats: has no pod anti-affinity on kubernetes.io/hostname",
	},
	{
		name:     "more than one replica in development",
		file:     "overlays/dev/kustomization.yaml",
		old:      "  - name: agentruntime-routing\n    count: 1",
		new:      "  - name: agentruntime-routing\n    count: 2",
		overlays: []string{"dev"},
		want:     "Deployment/agentruntime-routing: runs 2 replica(s), want 1 to 1",
	},
	{
		name: "missing liveness probe",
		file: "base/otel-collector/otel-collector.yaml",
		old:  "          livenessProbe:\n            httpGet:\n              path: /\n              port: health\n            periodSeconds: 15\n            failureThreshold: 3\n",
		new:  "",
		want: "Deployment/otel-collector: container otel-collector: has no livenessProbe",
	},
	{
		name:     "development auth file the binary refuses",
		file:     "overlays/dev/auth.yaml",
		old:      "role: admin",
		new:      "role: root",
		overlays: []string{"dev"},
		want:     `role "root" is invalid`,
	},
	{
		name:     "auth Secret not rendered",
		file:     "overlays/dev/kustomization.yaml",
		old:      "  - name: agentruntime-auth\n",
		new:      "  - name: agentruntime-credentials\n",
		overlays: []string{"dev"},
		want:     "Deployment/agentruntime-control: refers to Secret agentruntime-auth, which is not rendered",
	},
	{
		name: "collector pipeline uses an undefined exporter",
		file: "base/otel-collector/config.yaml",
		old:  "exporters: [debug]",
		new:  "exporters: [otlp]",
		want: "Deployment/otel-collector: /etc/otelcol/config.yaml uses exporter otlp, which it does not define",
	},
}

// copyManifests copies base/ and overlays/ into a new temporary directory.
func copyManifests(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, dir := range []string{"base", "overlays"} {
		require.NoError(t, os.CopyFS(filepath.Join(root, dir), os.DirFS(dir)))
	}
	return root
}

// The checks have teeth: each breakage, alone in a copy of the manifests,
// is reported by name.
func TestChecksCatchBrokenManifests(t *testing.T) {
	t.Parallel()
	for _, b := range breakages {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			root := copyManifests(t)
			for _, ed := range append([]edit{{b.file, b.old, b.new}}, b.also...) {
				file := filepath.Join(root, ed.file)
				data, err := os.ReadFile(file)
				require.NoError(t, err)
				// A breakage that no longer applies must fail, not pass quietly.
				require.Equal(t, 1, strings.Count(string(data), ed.old), "%s must contain the text to break exactly once:\n%s", ed.file, ed.old)
				require.NoError(t, os.WriteFile(file, []byte(strings.Replace(string(data), ed.old, ed.new, 1)), 0o644))
			}
			scope := b.overlays
			if len(scope) == 0 {
				scope = []string{"prod"}
			}
			for _, e := range overlays {
				if !slices.Contains(scope, e.overlay) {
					continue
				}
				problems := check(root, e)
				for _, want := range append([]string{b.want}, b.alsoWant...) {
					assert.True(t, containsSubstring(problems, want), "%s: want a problem containing\n  %s\ngot\n  %s", e.overlay, want, strings.Join(problems, "\n  "))
				}
			}
		})
	}
}

func containsSubstring(list []string, sub string) bool {
	for _, v := range list {
		if strings.Contains(v, sub) {
			return true
		}
	}
	return false
}
