package k8s

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/agentruntime/agentruntime/pkg/auth"
	"github.com/agentruntime/agentruntime/pkg/config"
	"github.com/agentruntime/agentruntime/services/all"
	"github.com/agentruntime/agentruntime/services/control"
	"github.com/agentruntime/agentruntime/services/evidence"
	"github.com/agentruntime/agentruntime/services/permission"
	"github.com/agentruntime/agentruntime/services/routing"
	"github.com/agentruntime/agentruntime/services/tasks"
)

const (
	// namespace every object lives in (base/kustomization.yaml).
	namespace = "agentruntime"
	// serviceContainer is the agentruntime container of every service pod.
	serviceContainer = "agentruntime"
	// authSecret holds the auth file; production creates it by hand.
	authSecret = "agentruntime-auth"
)

// healthNames are the grpc.health.v1 names the binary registers, taken from
// the services themselves so a rename fails here instead of in a cluster.
var healthNames = map[string]string{
	control.Name:    control.HealthName,
	tasks.Name:      tasks.HealthName,
	routing.Name:    routing.HealthName,
	permission.Name: permission.HealthName,
	evidence.Name:   evidence.HealthName,
}

// serveFlags are the flags of `agentruntime serve` (docs/configuration.md);
// any other AR_* variable would be ignored by the binary without a word.
var serveFlags = []string{
	"nats", "redis", "auth", "listen", "replicas", "partitions",
	"log-level", "otlp-endpoint", "otlp-insecure", "runtime-id", "shutdown-timeout", "metrics-listen",
	"log-max-age", "log-max-bytes", "hook-allow-hosts", "insecure-plaintext", "tls-cert", "tls-key", "health-listen",
}

// deploymentName is the Deployment and Service of a service.
func deploymentName(service string) string { return "agentruntime-" + service }

// expectations are what differs between the overlays.
type expectations struct {
	overlay string
	// autoscaled: each service has an HPA (which then owns the replica
	// count) and a PodDisruptionBudget.
	autoscaled bool
	// minServiceReplicas and maxServiceReplicas bound each service's
	// running count: the HPA's minimum when autoscaled, else spec.replicas.
	minServiceReplicas, maxServiceReplicas int32
	// minServiceBudget is the least minAvailable of each service's
	// PodDisruptionBudget: pods a drain must leave serving.
	minServiceBudget int32
	natsReplicas     int32
	// streamReplicas is AR_REPLICAS: JetStream replicas of the event log.
	streamReplicas int
	// partitions is AR_PARTITIONS: streams the event log is split into.
	partitions   int
	antiAffinity bool
	// externalSecrets are created outside the manifests.
	externalSecrets []string
	// frontDoor: a Gateway and a GRPCRoute per service (not on a laptop
	// cluster, which has no Gateway API controller).
	frontDoor bool
	// frontDoorTLS: every listener of the Gateway terminates TLS with a
	// certificate cert-manager issues for its host name.
	frontDoorTLS bool
	// serviceTLS: every service serves TLS with a certificate
	// cert-manager keeps in a mounted Secret, health in clear for the
	// probes, and the Gateway verifies it (BackendTLSPolicy).
	serviceTLS bool
}

var overlays = []expectations{
	{overlay: "dev", minServiceReplicas: 1, maxServiceReplicas: 1, natsReplicas: 1, streamReplicas: 1, partitions: 1},
	{
		overlay: "prod", autoscaled: true, minServiceReplicas: 3, maxServiceReplicas: 100, minServiceBudget: 2,
		natsReplicas: 3, streamReplicas: 3, partitions: 3, antiAffinity: true, externalSecrets: []string{authSecret, serviceTLSSecret}, frontDoor: true,
		frontDoorTLS: true, serviceTLS: true,
	},
}

// report collects problems; each names the object it is about.
type report struct{ problems []string }

func (r *report) add(subject any, format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf("%v: %s", subject, fmt.Sprintf(format, args...)))
}

// validate applies every rule to a rendered overlay.
func validate(c *cluster, e expectations) []string {
	r := &report{}
	checkNamespace(r, c)
	for _, w := range c.workloads() {
		checkWorkload(r, w)
	}
	checkServicesSelect(r, c)
	checkBudgetsAndAutoscalers(r, c)
	checkReferences(r, c, e)
	checkAgentruntime(r, c, e)
	checkServicesAlike(r, c)
	if e.frontDoor {
		checkGateway(r, c)
	}
	if e.frontDoorTLS {
		checkGatewayTLS(r, c)
	}
	if e.serviceTLS {
		checkServiceTLS(r, c)
	}
	nats := checkNATS(r, c, e)
	redis := checkRedis(r, c)
	collector, otlpPort := checkCollector(r, c)
	checkServiceConfig(r, c, e, nats, redis, collector, otlpPort)
	checkNetworkPolicies(r, c, nats, redis, collector, otlpPort)
	return r.problems
}

func checkNamespace(r *report, c *cluster) {
	ns, ok := named[*corev1.Namespace](c, namespace)
	if !ok {
		r.add("Namespace/"+namespace, "not rendered")
	} else if ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
		r.add("Namespace/"+namespace, "does not enforce the restricted Pod Security Standard")
	}
	for _, o := range c.objects {
		if o.kind != "Namespace" && o.namespace != namespace {
			r.add(o, "in namespace %q, want %q", o.namespace, namespace)
		}
	}
}

// checkWorkload holds every pod to the same bar: selectors that select,
// pinned images, resources, a locked-down security context, probes on
// ports the container exposes.
func checkWorkload(r *report, w workload) {
	if w.selector == nil || (len(w.selector.MatchLabels) == 0 && len(w.selector.MatchExpressions) == 0) {
		r.add(w, "has no selector")
	} else if !selects(w.selector, w.template.Labels) {
		r.add(w, "selector %v does not match its pod template's labels %v", metav1.FormatLabelSelector(w.selector), w.template.Labels)
	}
	spec := w.template.Spec
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		r.add(w, "pod securityContext.runAsNonRoot is not true")
	}
	if psc == nil || psc.SeccompProfile == nil || (psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault && psc.SeccompProfile.Type != corev1.SeccompProfileTypeLocalhost) {
		r.add(w, "pod securityContext.seccompProfile is not RuntimeDefault")
	}
	if spec.HostNetwork || spec.HostPID || spec.HostIPC {
		r.add(w, "shares a host namespace")
	}
	if spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		r.add(w, "mounts a service account token (automountServiceAccountToken is not false)")
	}
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			r.add(w, "volume %s is a hostPath", v.Name)
		}
	}
	volumes := map[string]bool{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = true
	}
	for _, pvc := range w.claims {
		volumes[pvc.Name] = true
	}
	for _, ctr := range slices.Concat(spec.InitContainers, spec.Containers) {
		where := fmt.Sprintf("%v: container %s", w, ctr.Name)
		if p := imageProblem(ctr.Image); p != "" {
			r.add(where, "image %q %s", ctr.Image, p)
		}
		checkResources(r, where, ctr.Resources)
		checkContainerSecurity(r, where, psc, ctr.SecurityContext)
		for _, m := range ctr.VolumeMounts {
			if !volumes[m.Name] {
				r.add(where, "mounts volume %s, which the pod does not have", m.Name)
			}
		}
	}
	for i := range spec.Containers {
		ctr := &spec.Containers[i]
		where := fmt.Sprintf("%v: container %s", w, ctr.Name)
		if ctr.ReadinessProbe == nil {
			r.add(where, "has no readinessProbe")
		}
		if ctr.LivenessProbe == nil {
			r.add(where, "has no livenessProbe")
		}
		for kind, p := range map[string]*corev1.Probe{"readinessProbe": ctr.ReadinessProbe, "livenessProbe": ctr.LivenessProbe, "startupProbe": ctr.StartupProbe} {
			if port, ok := probePort(p); ok && containerPort(ctr, port) == 0 {
				r.add(where, "%s port %s is not a port of the container", kind, port.String())
			}
		}
	}
}

// natsAtLeast reports whether an image tag such as "2.15.2-alpine" is at
// least major.minor (a tag that is no version is not).
func natsAtLeast(tag string, major, minor int) bool {
	v, _, _ := strings.Cut(strings.TrimPrefix(tag, "v"), "-")
	parts := strings.Split(v, ".")
	if len(parts) < 2 {
		return false
	}
	ma, err1 := strconv.Atoi(parts[0])
	mi, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

// imageProblem says what is wrong with an image reference, or "".
func imageProblem(image string) string {
	if image == "" {
		return "is empty"
	}
	name, digest, hasDigest := strings.Cut(image, "@")
	if hasDigest && !strings.HasPrefix(digest, "sha256:") {
		return "has a malformed digest"
	}
	_, tag := splitTag(name)
	switch {
	case tag == "latest":
		return "uses the floating tag latest: pin a version"
	case tag == "" && !hasDigest:
		return "has no tag or digest: pin a version"
	}
	return ""
}

// splitTag splits "registry:5000/repo:tag" into repository and tag.
func splitTag(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		return ref[:i], ref[i+1:]
	}
	return ref, ""
}

// repository is an image's repository without Docker Hub's implicit prefix.
func repository(image string) string {
	repo, _ := splitTag(image)
	repo = strings.TrimPrefix(repo, "docker.io/")
	return strings.TrimPrefix(repo, "library/")
}

func checkResources(r *report, where string, res corev1.ResourceRequirements) {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, hasReq := res.Requests[name]
		lim, hasLim := res.Limits[name]
		if !hasReq || req.IsZero() {
			r.add(where, "no %s request", name)
		}
		if !hasLim || lim.IsZero() {
			r.add(where, "no %s limit", name)
		}
		if hasReq && hasLim && req.Cmp(lim) > 0 {
			r.add(where, "%s request %s above its limit %s", name, req.String(), lim.String())
		}
	}
}

func checkContainerSecurity(r *report, where string, pod *corev1.PodSecurityContext, sc *corev1.SecurityContext) {
	if sc == nil {
		r.add(where, "has no securityContext")
		return
	}
	nonRoot := sc.RunAsNonRoot
	user := sc.RunAsUser
	if pod != nil {
		nonRoot = cmp.Or(nonRoot, pod.RunAsNonRoot)
		user = cmp.Or(user, pod.RunAsUser)
	}
	if nonRoot == nil || !*nonRoot {
		r.add(where, "runAsNonRoot is not true")
	}
	if user != nil && *user == 0 {
		r.add(where, "runs as user 0")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		r.add(where, "allowPrivilegeEscalation is not false")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		r.add(where, "readOnlyRootFilesystem is not true")
	}
	if sc.Privileged != nil && *sc.Privileged {
		r.add(where, "is privileged")
	}
	if sc.Capabilities == nil || !slices.Contains(sc.Capabilities.Drop, "ALL") {
		r.add(where, "does not drop ALL capabilities")
	} else if len(sc.Capabilities.Add) > 0 {
		r.add(where, "adds capabilities %v", sc.Capabilities.Add)
	}
}

// probePort is the port a probe connects to; exec probes have none.
func probePort(p *corev1.Probe) (intstr.IntOrString, bool) {
	switch {
	case p == nil:
	case p.GRPC != nil:
		return intstr.FromInt32(p.GRPC.Port), true
	case p.HTTPGet != nil:
		return p.HTTPGet.Port, true
	case p.TCPSocket != nil:
		return p.TCPSocket.Port, true
	}
	return intstr.IntOrString{}, false
}

// containerPort resolves a port number or name against the container's
// declared ports; 0 when the container does not declare it.
func containerPort(ctr *corev1.Container, port intstr.IntOrString) int32 {
	for _, p := range ctr.Ports {
		if (port.Type == intstr.Int && p.ContainerPort == port.IntVal) || (port.Type == intstr.String && p.Name == port.StrVal) {
			return p.ContainerPort
		}
	}
	return 0
}

// podPort resolves a port against every container of a pod.
func podPort(spec corev1.PodSpec, port intstr.IntOrString) int32 {
	for i := range spec.Containers {
		if n := containerPort(&spec.Containers[i], port); n != 0 {
			return n
		}
	}
	return 0
}

func selects(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	return err == nil && !s.Empty() && s.Matches(labels.Set(podLabels))
}

// selectsWithKeys is selects for topology spread and affinity terms, whose
// matchLabelKeys add the pod's own value of each key to the selector.
// pod-template-hash is set by the Deployment controller, never rendered.
func selectsWithKeys(sel *metav1.LabelSelector, keys []string, podLabels map[string]string) bool {
	if sel == nil {
		return false
	}
	merged := sel.DeepCopy()
	for _, k := range keys {
		if v, ok := podLabels[k]; ok {
			merged.MatchExpressions = append(merged.MatchExpressions, metav1.LabelSelectorRequirement{Key: k, Operator: metav1.LabelSelectorOpIn, Values: []string{v}})
		}
	}
	return selects(merged, podLabels)
}

// selected are the workloads whose pods a selector picks.
func (c *cluster) selected(sel *metav1.LabelSelector) []workload {
	var out []workload
	for _, w := range c.workloads() {
		if selects(sel, w.template.Labels) {
			out = append(out, w)
		}
	}
	return out
}

// checkServicesSelect: every Service routes to pods that exist, on ports
// they expose; every StatefulSet's governing Service is headless.
func checkServicesSelect(r *report, c *cluster) {
	for _, svc := range find[*corev1.Service](c) {
		id := "Service/" + svc.Name
		if len(svc.Spec.Selector) == 0 {
			r.add(id, "has no selector")
			continue
		}
		targets := c.selected(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
		if len(targets) == 0 {
			r.add(id, "selector %v matches no pod template", svc.Spec.Selector)
		}
		for _, p := range svc.Spec.Ports {
			target := p.TargetPort
			if target.Type == intstr.Int && target.IntVal == 0 {
				target = intstr.FromInt32(p.Port)
			}
			for _, w := range targets {
				if podPort(w.template.Spec, target) == 0 {
					r.add(id, "port %s targets %s, which %v does not expose", p.Name, target.String(), w)
				}
			}
		}
	}
	for _, sts := range find[*appsv1.StatefulSet](c) {
		id := "StatefulSet/" + sts.Name
		svc, ok := named[*corev1.Service](c, sts.Spec.ServiceName)
		switch {
		case !ok:
			r.add(id, "serviceName %q is not a rendered Service", sts.Spec.ServiceName)
		case svc.Spec.ClusterIP != corev1.ClusterIPNone:
			r.add(id, "governing Service %s is not headless", svc.Name)
		case !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, sts.Spec.Template.Labels):
			r.add(id, "governing Service %s does not select its pods", svc.Name)
		}
	}
}

// checkBudgetsAndAutoscalers: budgets and autoscalers point at workloads,
// and no budget can block every drain.
func checkBudgetsAndAutoscalers(r *report, c *cluster) {
	for _, pdb := range find[*policyv1.PodDisruptionBudget](c) {
		id := "PodDisruptionBudget/" + pdb.Name
		targets := c.selected(pdb.Spec.Selector)
		if len(targets) == 0 {
			r.add(id, "selects no pods")
		}
		if pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.Type != intstr.Int {
			continue
		}
		for _, w := range targets {
			if n := minimumReplicas(c, w); pdb.Spec.MinAvailable.IntVal >= n {
				r.add(id, "minAvailable %d with %d replica(s) of %v blocks every node drain", pdb.Spec.MinAvailable.IntVal, n, w)
			}
		}
	}
	for _, hpa := range find[*autoscalingv2.HorizontalPodAutoscaler](c) {
		id := "HorizontalPodAutoscaler/" + hpa.Name
		if _, ok := c.workload(hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name); !ok {
			r.add(id, "scales %s/%s, which is not rendered", hpa.Spec.ScaleTargetRef.Kind, hpa.Spec.ScaleTargetRef.Name)
		}
		if hpa.Spec.MinReplicas == nil || *hpa.Spec.MinReplicas > hpa.Spec.MaxReplicas {
			r.add(id, "minReplicas unset or above maxReplicas")
		}
	}
}

// autoscaler returns the HPA scaling a workload, if any.
func (c *cluster) autoscaler(w workload) *autoscalingv2.HorizontalPodAutoscaler {
	for _, hpa := range find[*autoscalingv2.HorizontalPodAutoscaler](c) {
		if hpa.Spec.ScaleTargetRef.Kind == w.kind && hpa.Spec.ScaleTargetRef.Name == w.name {
			return hpa
		}
	}
	return nil
}

// minimumReplicas is the fewest pods the workload runs with.
func minimumReplicas(c *cluster, w workload) int32 {
	if hpa := c.autoscaler(w); hpa != nil && hpa.Spec.MinReplicas != nil {
		return *hpa.Spec.MinReplicas
	}
	return w.effectiveReplicas()
}

// checkReferences: every ConfigMap, Secret and ServiceAccount a pod names
// is rendered (or is one the overlay says is created by hand).
func checkReferences(r *report, c *cluster, e expectations) {
	configMaps, secrets, accounts := map[string]bool{}, map[string]bool{}, map[string]bool{"": true}
	for _, cm := range find[*corev1.ConfigMap](c) {
		configMaps[cm.Name] = true
	}
	for _, s := range find[*corev1.Secret](c) {
		secrets[s.Name] = true
	}
	for _, s := range e.externalSecrets {
		secrets[s] = true
	}
	for _, sa := range find[*corev1.ServiceAccount](c) {
		accounts[sa.Name] = true
	}
	for _, w := range c.workloads() {
		spec := w.template.Spec
		if !accounts[spec.ServiceAccountName] {
			r.add(w, "serviceAccountName %s is not rendered", spec.ServiceAccountName)
		}
		need := func(kind string, have map[string]bool, name string, optional *bool) {
			if !have[name] && (optional == nil || !*optional) {
				r.add(w, "refers to %s %s, which is not rendered", kind, name)
			}
		}
		for _, v := range spec.Volumes {
			if v.ConfigMap != nil {
				need("ConfigMap", configMaps, v.ConfigMap.Name, v.ConfigMap.Optional)
			}
			if v.Secret != nil {
				need("Secret", secrets, v.Secret.SecretName, v.Secret.Optional)
			}
		}
		for _, ctr := range slices.Concat(spec.InitContainers, spec.Containers) {
			for _, from := range ctr.EnvFrom {
				if from.ConfigMapRef != nil {
					need("ConfigMap", configMaps, from.ConfigMapRef.Name, from.ConfigMapRef.Optional)
				}
				if from.SecretRef != nil {
					need("Secret", secrets, from.SecretRef.Name, from.SecretRef.Optional)
				}
			}
			for _, env := range ctr.Env {
				if env.ValueFrom == nil {
					continue
				}
				if ref := env.ValueFrom.ConfigMapKeyRef; ref != nil {
					need("ConfigMap", configMaps, ref.Name, ref.Optional)
				}
				if ref := env.ValueFrom.SecretKeyRef; ref != nil {
					need("Secret", secrets, ref.Name, ref.Optional)
				}
			}
		}
	}
}

// checkAgentruntime: each of the five services runs as its own Deployment
// with a Service, probed on its own health name, spread, and scaled as the
// overlay wants.
func checkAgentruntime(r *report, c *cluster, e expectations) {
	for _, name := range all.Names {
		id := "Deployment/" + deploymentName(name)
		w, ok := c.workload("Deployment", deploymentName(name))
		if !ok {
			r.add("service "+name, "has no Deployment %s", deploymentName(name))
			continue
		}
		ctr := w.container(serviceContainer)
		if ctr == nil {
			r.add(id, "has no container %s", serviceContainer)
			continue
		}
		if args := slices.Concat(ctr.Command, ctr.Args); !slices.Equal(args, []string{"serve", name}) {
			r.add(id, "runs %q, want [serve %s]", args, name)
		}
		grpcPort := containerPort(ctr, intstr.FromString("grpc"))
		if grpcPort == 0 {
			r.add(id, "container %s has no port named grpc", serviceContainer)
		}
		// The kubelet's gRPC probes speak no TLS: a service serving TLS is
		// probed on its health port (AR_HEALTH_LISTEN, in clear), which
		// must be the container's port "health"; any other on the gRPC
		// port.
		probePort := grpcPort
		if hl := serviceEnv(c, ctr)["AR_HEALTH_LISTEN"]; hl != "" {
			_, port, err := net.SplitHostPort(hl)
			health := containerPort(ctr, intstr.FromString("health"))
			if err != nil || port != strconv.Itoa(int(health)) {
				r.add(id, "AR_HEALTH_LISTEN %q is not the container's health port", hl)
			}
			probePort = health
		}
		probes := map[string]*corev1.Probe{"startupProbe": ctr.StartupProbe, "readinessProbe": ctr.ReadinessProbe, "livenessProbe": ctr.LivenessProbe}
		for _, kind := range slices.Sorted(maps.Keys(probes)) {
			p := probes[kind]
			switch {
			case p == nil || p.GRPC == nil:
				r.add(id, "%s is not a gRPC probe", kind)
			case kind == "readinessProbe" && (p.GRPC.Service == nil || *p.GRPC.Service != healthNames[name]):
				r.add(id, "%s asks for health %q, want %q", kind, deref(p.GRPC.Service), healthNames[name])
			case kind != "readinessProbe" && deref(p.GRPC.Service) != "":
				// Readiness follows the read models (NOT_SERVING while a
				// projector fails or lags); restarting the pod for that
				// would only start the rebuild over.
				r.add(id, "%s asks for health %q, want the process's (\"\")", kind, deref(p.GRPC.Service))
			case probePort == grpcPort && p.GRPC.Port != grpcPort:
				r.add(id, "%s probes port %d, want the gRPC port %d", kind, p.GRPC.Port, grpcPort)
			case p.GRPC.Port != probePort:
				r.add(id, "%s probes port %d, want the health port %d (AR_HEALTH_LISTEN)", kind, p.GRPC.Port, probePort)
			}
		}

		svc, ok := named[*corev1.Service](c, deploymentName(name))
		switch {
		case !ok:
			r.add("service "+name, "has no Service %s", deploymentName(name))
		case !selects(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, w.template.Labels):
			r.add("Service/"+svc.Name, "does not select the pods of %s", id)
		case !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool {
			return grpcPort != 0 && podPort(w.template.Spec, p.TargetPort) == grpcPort
		}):
			r.add("Service/"+svc.Name, "has no port to the gRPC port %d", grpcPort)
		}

		if !slices.ContainsFunc(w.template.Spec.TopologySpreadConstraints, func(t corev1.TopologySpreadConstraint) bool {
			return selectsWithKeys(t.LabelSelector, t.MatchLabelKeys, w.template.Labels)
		}) {
			r.add(id, "has no topology spread constraint that selects its own pods")
		}
		if e.antiAffinity && !antiAffine(w) {
			r.add(id, "has no pod anti-affinity on kubernetes.io/hostname that selects its own pods")
		}

		hpa := c.autoscaler(w)
		running := minimumReplicas(c, w)
		switch {
		case e.autoscaled && hpa == nil:
			r.add(id, "has no HorizontalPodAutoscaler")
		case !e.autoscaled && hpa != nil:
			r.add(id, "is autoscaled by %s; this overlay wants a fixed count", hpa.Name)
		case hpa != nil && w.replicas != nil:
			r.add(id, "sets replicas although %s owns the count: every apply would reset it", hpa.Name)
		}
		if running < e.minServiceReplicas || running > e.maxServiceReplicas {
			r.add(id, "runs %d replica(s), want %d to %d", running, e.minServiceReplicas, e.maxServiceReplicas)
		}
		budgets := slices.DeleteFunc(slices.Clone(find[*policyv1.PodDisruptionBudget](c)), func(p *policyv1.PodDisruptionBudget) bool {
			return !selects(p.Spec.Selector, w.template.Labels)
		})
		if e.autoscaled && len(budgets) == 0 {
			r.add(id, "has no PodDisruptionBudget")
		}
		for _, p := range budgets {
			if keep := p.Spec.MinAvailable; keep == nil || keep.Type != intstr.Int || keep.IntVal < e.minServiceBudget {
				r.add(id, "PodDisruptionBudget %s keeps %v pod(s) through a drain, want at least %d", p.Name, keep, e.minServiceBudget)
			}
		}
	}
}

// checkServicesAlike: the five services' objects are one shape, differing
// only in the service's name and health name; a setting changed in one
// file and not the others is reported with where it differs.
func checkServicesAlike(r *report, c *cluster) {
	generic := func(o object, name string) any {
		data, err := json.Marshal(o.obj)
		if err != nil {
			return err.Error()
		}
		text := strings.ReplaceAll(string(data), healthNames[name], "HEALTH")
		text = strings.ReplaceAll(text, `"`+name+`"`, `"SERVICE"`)
		text = strings.ReplaceAll(text, deploymentName(name), "agentruntime-SERVICE")
		var v any
		_ = json.Unmarshal([]byte(text), &v)
		return v
	}
	first := all.Names[0]
	for _, kind := range []string{"Deployment", "Service", "PodDisruptionBudget", "HorizontalPodAutoscaler"} {
		byService := map[string]object{}
		for _, o := range c.objects {
			for _, name := range all.Names {
				if o.kind == kind && o.name == deploymentName(name) {
					byService[name] = o
				}
			}
		}
		want, ok := byService[first]
		if !ok {
			continue
		}
		for _, name := range all.Names[1:] {
			if got, ok := byService[name]; ok {
				if where := firstDifference(generic(want, first), generic(got, name), ""); where != "" {
					r.add(got, "differs from %v beyond its name, at %s", want, where)
				}
			}
		}
	}
}

// firstDifference is the path of the first difference between two JSON
// values, or "".
func firstDifference(a, b any, at string) string {
	switch a := a.(type) {
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok {
			return cmp.Or(at, ".")
		}
		keys := slices.Concat(slices.Collect(maps.Keys(a)), slices.Collect(maps.Keys(bm)))
		slices.Sort(keys)
		for _, k := range slices.Compact(keys) {
			if d := firstDifference(a[k], bm[k], at+"."+k); d != "" {
				return d
			}
		}
		return ""
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return cmp.Or(at, ".")
		}
		for i := range a {
			if d := firstDifference(a[i], bl[i], fmt.Sprintf("%s[%d]", at, i)); d != "" {
				return d
			}
		}
		return ""
	}
	if fmt.Sprint(a) != fmt.Sprint(b) {
		return cmp.Or(at, ".")
	}
	return ""
}

// antiAffine: the pod keeps away from its siblings on other nodes.
func antiAffine(w workload) bool {
	a := w.template.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return false
	}
	terms := slices.Clone(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
	for _, p := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		terms = append(terms, p.PodAffinityTerm)
	}
	return slices.ContainsFunc(terms, func(t corev1.PodAffinityTerm) bool {
		return t.TopologyKey == corev1.LabelHostname && selectsWithKeys(t.LabelSelector, t.MatchLabelKeys, w.template.Labels)
	})
}

func deref[T any](p *T) T {
	if p == nil {
		var zero T
		return zero
	}
	return *p
}

// byImage finds the workload whose containers run an image of repo (and
// returns that container).
func (c *cluster) byImage(kind string, match func(repo string) bool) (workload, *corev1.Container, bool) {
	for _, w := range c.workloads() {
		for i := range w.template.Spec.Containers {
			if ctr := &w.template.Spec.Containers[i]; w.kind == kind && match(repository(ctr.Image)) {
				return w, ctr, true
			}
		}
	}
	return workload{}, nil, false
}

// configFile returns the content of a file the container reads from a
// mounted ConfigMap.
func (c *cluster) configFile(w workload, ctr *corev1.Container, file string) (string, error) {
	for _, m := range ctr.VolumeMounts {
		rel, err := filepath.Rel(m.MountPath, file)
		if err != nil || strings.HasPrefix(rel, "..") {
			continue
		}
		i := slices.IndexFunc(w.template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 || w.template.Spec.Volumes[i].ConfigMap == nil {
			return "", fmt.Errorf("%s is not on a ConfigMap volume", file)
		}
		cm, ok := named[*corev1.ConfigMap](c, w.template.Spec.Volumes[i].ConfigMap.Name)
		if !ok {
			return "", fmt.Errorf("ConfigMap %s of %s is not rendered", w.template.Spec.Volumes[i].ConfigMap.Name, file)
		}
		data, ok := cm.Data[rel]
		if !ok {
			return "", fmt.Errorf("ConfigMap %s has no key %s", cm.Name, rel)
		}
		return data, nil
	}
	return "", fmt.Errorf("%s is on no volume", file)
}

// onClaim reports whether dir is on one of the workload's persistent
// volume claims.
func onClaim(w workload, ctr *corev1.Container, dir string) bool {
	for _, m := range ctr.VolumeMounts {
		if rel, err := filepath.Rel(m.MountPath, dir); err == nil && !strings.HasPrefix(rel, "..") {
			return slices.ContainsFunc(w.claims, func(p corev1.PersistentVolumeClaim) bool { return p.Name == m.Name })
		}
	}
	return false
}

// flagValue finds `--flag value` or `--flag=value` in a command line.
func flagValue(args []string, names ...string) string {
	for i, a := range args {
		for _, n := range names {
			if a == n && i+1 < len(args) {
				return args[i+1]
			}
			if v, ok := strings.CutPrefix(a, n+"="); ok {
				return v
			}
		}
	}
	return ""
}

var confVariable = regexp.MustCompile(`\$([A-Za-z_][A-Za-z0-9_]*)`)

// checkNATS: a StatefulSet runs NATS with JetStream on persistent storage,
// its nats.conf is one the server accepts, and its cluster routes name
// exactly the pods the StatefulSet runs.
func checkNATS(r *report, c *cluster, e expectations) *workload {
	w, ctr, ok := c.byImage("StatefulSet", func(repo string) bool { return repo == "nats" })
	if !ok {
		r.add("NATS", "no StatefulSet runs the nats image")
		return nil
	}
	if w.effectiveReplicas() != e.natsReplicas {
		r.add(w, "runs %d NATS server(s), want %d", w.effectiveReplicas(), e.natsReplicas)
	}
	if int(w.effectiveReplicas()) < e.streamReplicas {
		r.add(w, "%d server(s) cannot hold %d stream replicas", w.effectiveReplicas(), e.streamReplicas)
	}
	if e.antiAffinity && !antiAffine(w) {
		r.add(w, "has no pod anti-affinity on kubernetes.io/hostname")
	}
	// The event stream relies on atomic batch publish (AllowAtomicPublish,
	// AppendAtomic) and batch direct gets: nats-server 2.12 or later.
	if _, tag := splitTag(ctr.Image); !natsAtLeast(tag, 2, 12) {
		r.add(w, "nats image %q is older than 2.12 (atomic batch publish, which the event stream relies on)", tag)
	}
	if p := ctr.ReadinessProbe; p == nil || p.HTTPGet == nil || !strings.HasPrefix(p.HTTPGet.Path, "/healthz") {
		r.add(w, "readinessProbe is not NATS's /healthz")
	}
	file := flagValue(slices.Concat(ctr.Command, ctr.Args), "--config", "-c")
	if file == "" {
		r.add(w, "runs nats-server without --config")
		return &w
	}
	text, err := c.configFile(w, ctr, file)
	if err != nil {
		r.add(w, "%v", err)
		return &w
	}
	// $VARS the config takes from the container's environment, with the
	// value the first pod would see.
	text = confVariable.ReplaceAllStringFunc(text, func(ref string) string {
		for _, env := range ctr.Env {
			if env.Name != ref[1:] {
				continue
			}
			if env.ValueFrom != nil && env.ValueFrom.FieldRef != nil && env.ValueFrom.FieldRef.FieldPath == "metadata.name" {
				return w.name + "-0"
			}
			return strconv.Quote(env.Value)
		}
		return ref
	})
	opts := &server.Options{}
	if err := opts.ProcessConfigString(text); err != nil {
		r.add(w, "nats-server refuses %s: %v", file, err)
		return &w
	}
	if !opts.JetStream {
		r.add(w, "%s does not enable JetStream", file)
	}
	if !onClaim(w, ctr, opts.StoreDir) {
		r.add(w, "JetStream store_dir %q is not on a persistent volume claim", opts.StoreDir)
	}
	if containerPort(ctr, intstr.FromInt32(int32(opts.Port))) == 0 {
		r.add(w, "nats.conf listens on %d, which the container does not expose", opts.Port)
	}
	if p := ctr.ReadinessProbe; p != nil && p.HTTPGet != nil && int(containerPort(ctr, p.HTTPGet.Port)) != opts.HTTPPort {
		r.add(w, "readinessProbe asks port %s, the monitoring port is %d", p.HTTPGet.Port.String(), opts.HTTPPort)
	}
	replicas := int(w.effectiveReplicas())
	if replicas == 1 {
		if len(opts.Routes) > 0 {
			r.add(w, "one server with routes to %d: a clustered JetStream waits for a quorum that never comes", len(opts.Routes))
		}
		return &w
	}
	if containerPort(ctr, intstr.FromInt32(int32(opts.Cluster.Port))) == 0 {
		r.add(w, "cluster port %d is not exposed", opts.Cluster.Port)
	}
	var want, got []string
	for i := range replicas {
		want = append(want, net.JoinHostPort(fmt.Sprintf("%s-%d.%s", w.name, i, w.serviceName(c)), strconv.Itoa(opts.Cluster.Port)))
	}
	for _, u := range opts.Routes {
		got = append(got, u.Host)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		r.add(w, "cluster routes %v, want one per pod %v", got, want)
	}
	if sts, ok := w.obj.(*appsv1.StatefulSet); ok && sts.Spec.PodManagementPolicy != appsv1.ParallelPodManagement {
		r.add(w, "podManagementPolicy must be Parallel: servers only get healthy together")
	}
	if svc, ok := named[*corev1.Service](c, w.serviceName(c)); ok && !svc.Spec.PublishNotReadyAddresses {
		r.add("Service/"+svc.Name, "must publish not-ready addresses: routes resolve before any server is ready")
	}
	return &w
}

func (w workload) serviceName(c *cluster) string {
	if sts, ok := w.obj.(*appsv1.StatefulSet); ok {
		return sts.Spec.ServiceName
	}
	return ""
}

// checkRedis: a StatefulSet runs Redis 7 with its data directory on a
// persistent volume claim.
func checkRedis(r *report, c *cluster) *workload {
	w, ctr, ok := c.byImage("StatefulSet", func(repo string) bool { return repo == "redis" })
	if !ok {
		r.add("Redis", "no StatefulSet runs the redis image")
		return nil
	}
	if _, tag := splitTag(ctr.Image); !strings.HasPrefix(tag, "7.") {
		r.add(w, "runs Redis %q, want 7.x", tag)
	}
	args := slices.Concat(ctr.Command, ctr.Args)
	if len(args) < 2 || !strings.HasSuffix(args[1], ".conf") {
		r.add(w, "runs %q, want redis-server with a config file", args)
		return &w
	}
	text, err := c.configFile(w, ctr, args[1])
	if err != nil {
		r.add(w, "%v", err)
		return &w
	}
	dir := ""
	for line := range strings.Lines(text) {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "dir" {
			dir = f[1]
		}
	}
	if !onClaim(w, ctr, dir) {
		r.add(w, "Redis dir %q is not on a persistent volume claim", dir)
	}
	return &w
}

// collectorConfig is the part of the collector's configuration checked.
type collectorConfig struct {
	Extensions map[string]yaml.Node `yaml:"extensions"`
	Receivers  map[string]struct {
		Protocols struct {
			GRPC *struct {
				Endpoint string `yaml:"endpoint"`
			} `yaml:"grpc"`
		} `yaml:"protocols"`
	} `yaml:"receivers"`
	Processors map[string]yaml.Node `yaml:"processors"`
	Exporters  map[string]yaml.Node `yaml:"exporters"`
	Service    struct {
		Extensions []string `yaml:"extensions"`
		Pipelines  map[string]struct {
			Receivers  []string `yaml:"receivers"`
			Processors []string `yaml:"processors"`
			Exporters  []string `yaml:"exporters"`
		} `yaml:"pipelines"`
	} `yaml:"service"`
}

// checkCollector: the collector's pipelines use only components it
// defines; returns the port its OTLP/gRPC receiver listens on.
func checkCollector(r *report, c *cluster) (*workload, int32) {
	w, ctr, ok := c.byImage("Deployment", func(repo string) bool { return strings.HasPrefix(repo, "otel/opentelemetry-collector") })
	if !ok {
		r.add("OpenTelemetry collector", "no Deployment runs an otel/opentelemetry-collector image")
		return nil, 0
	}
	file := flagValue(slices.Concat(ctr.Command, ctr.Args), "--config")
	text, err := c.configFile(w, ctr, file)
	if err != nil {
		r.add(w, "%v", err)
		return &w, 0
	}
	var cfg collectorConfig
	if err := yaml.Unmarshal([]byte(text), &cfg); err != nil {
		r.add(w, "%s: %v", file, err)
		return &w, 0
	}
	defined := func(kind string, have map[string]yaml.Node, ids []string) {
		for _, id := range ids {
			if _, ok := have[id]; !ok {
				r.add(w, "%s uses %s %s, which it does not define", file, kind, id)
			}
		}
	}
	receivers := map[string]yaml.Node{}
	for id := range cfg.Receivers {
		receivers[id] = yaml.Node{}
	}
	defined("extension", cfg.Extensions, cfg.Service.Extensions)
	if len(cfg.Service.Pipelines["traces"].Receivers) == 0 {
		r.add(w, "%s has no traces pipeline", file)
	}
	for _, p := range cfg.Service.Pipelines {
		defined("receiver", receivers, p.Receivers)
		defined("processor", cfg.Processors, p.Processors)
		defined("exporter", cfg.Exporters, p.Exporters)
	}
	otlp, ok := cfg.Receivers["otlp"]
	if !ok || otlp.Protocols.GRPC == nil {
		r.add(w, "%s has no OTLP/gRPC receiver", file)
		return &w, 0
	}
	_, port, err := net.SplitHostPort(otlp.Protocols.GRPC.Endpoint)
	n, _ := strconv.Atoi(port)
	if err != nil || containerPort(ctr, intstr.FromInt32(int32(n))) == 0 {
		r.add(w, "OTLP/gRPC receiver endpoint %q is not a port of the container", otlp.Protocols.GRPC.Endpoint)
		return &w, 0
	}
	return &w, int32(n)
}

// serviceEnv is the environment of the agentruntime container: envFrom
// ConfigMaps, then env, as the kubelet builds it.
func serviceEnv(c *cluster, ctr *corev1.Container) map[string]string {
	env := map[string]string{}
	for _, from := range ctr.EnvFrom {
		if from.ConfigMapRef == nil {
			continue
		}
		if cm, ok := named[*corev1.ConfigMap](c, from.ConfigMapRef.Name); ok {
			for k, v := range cm.Data {
				env[from.Prefix+k] = v
			}
		}
	}
	for _, e := range ctr.Env {
		env[e.Name] = e.Value
	}
	return env
}

// resolve follows host:port through a Service to the workload behind it
// and the container port it lands on.
func resolve(c *cluster, host string, port int) (workload, int32, error) {
	name, rest, _ := strings.Cut(host, ".")
	if rest != "" && !strings.HasPrefix(rest, namespace+".") && rest != namespace {
		return workload{}, 0, fmt.Errorf("%s is outside namespace %s", host, namespace)
	}
	svc, ok := named[*corev1.Service](c, name)
	if !ok {
		return workload{}, 0, fmt.Errorf("no Service %s", name)
	}
	i := slices.IndexFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return int(p.Port) == port })
	if i < 0 {
		return workload{}, 0, fmt.Errorf("Service %s has no port %d", name, port)
	}
	targets := c.selected(&metav1.LabelSelector{MatchLabels: svc.Spec.Selector})
	if len(targets) == 0 {
		return workload{}, 0, fmt.Errorf("Service %s selects no pods", name)
	}
	target := svc.Spec.Ports[i].TargetPort
	if target.Type == intstr.Int && target.IntVal == 0 {
		target = intstr.FromInt32(svc.Spec.Ports[i].Port)
	}
	return targets[0], podPort(targets[0].template.Spec, target), nil
}

// checkServiceConfig: the AR_* environment of every service is made of
// flags `serve` has, and each address in it reaches what it should.
func checkServiceConfig(r *report, c *cluster, e expectations, nats, redis, collector *workload, otlpPort int32) {
	known := map[string]bool{}
	for _, f := range serveFlags {
		known[config.EnvName(f)] = true
	}
	checkedAuth := map[string]bool{}
	for _, name := range all.Names {
		w, ok := c.workload("Deployment", deploymentName(name))
		if !ok || w.container(serviceContainer) == nil {
			continue // reported by checkAgentruntime
		}
		ctr := w.container(serviceContainer)
		env := serviceEnv(c, ctr)
		for _, k := range slices.Sorted(maps.Keys(env)) {
			if strings.HasPrefix(k, config.EnvPrefix) && !known[k] {
				r.add(w, "%s is not a flag of agentruntime serve: it would be ignored", k)
			}
		}
		for _, k := range []string{"AR_NATS", "AR_REDIS", "AR_AUTH"} {
			if env[k] == "" {
				r.add(w, "%s is not set: serve requires it", k)
			}
		}

		// AR_LISTEN: the port the probes and the Service use.
		if _, port, err := net.SplitHostPort(cmp.Or(env["AR_LISTEN"], ":7070")); err != nil || port != strconv.Itoa(int(containerPort(ctr, intstr.FromString("grpc")))) {
			r.add(w, "AR_LISTEN %q is not the container's grpc port", env["AR_LISTEN"])
		}
		// AR_AUTH: a file in a mounted Secret.
		if p := env["AR_AUTH"]; p != "" {
			checkAuthFile(r, c, w, ctr, p, checkedAuth)
		}
		// AR_REPLICAS: what the NATS cluster can hold.
		n, err := strconv.Atoi(cmp.Or(env["AR_REPLICAS"], "1"))
		if err != nil || n != e.streamReplicas {
			r.add(w, "AR_REPLICAS %q, want %d", env["AR_REPLICAS"], e.streamReplicas)
		}
		if nats != nil && int32(n) > nats.effectiveReplicas() {
			r.add(w, "AR_REPLICAS %d exceeds the %d NATS server(s)", n, nats.effectiveReplicas())
		}
		// AR_PARTITIONS: one stream leader per NATS server at most adds
		// append capacity; every service must agree (the log refuses
		// another count).
		p, err := strconv.Atoi(cmp.Or(env["AR_PARTITIONS"], "1"))
		if err != nil || p != e.partitions {
			r.add(w, "AR_PARTITIONS %q, want %d", env["AR_PARTITIONS"], e.partitions)
		}
		// AR_NATS, AR_REDIS, AR_OTLP_ENDPOINT: Services in front of the
		// right pods and ports.
		if nats != nil {
			for _, u := range strings.Split(env["AR_NATS"], ",") {
				checkAddress(r, c, w, "AR_NATS", u, "nats", *nats, "client")
			}
		}
		if redis != nil {
			checkAddress(r, c, w, "AR_REDIS", env["AR_REDIS"], "redis", *redis, "redis")
		}
		if collector != nil && otlpPort != 0 {
			endpoint := env["AR_OTLP_ENDPOINT"]
			if !strings.Contains(endpoint, "://") {
				endpoint = "otlp://" + endpoint
			}
			checkAddress(r, c, w, "AR_OTLP_ENDPOINT", endpoint, "", *collector, strconv.Itoa(int(otlpPort)))
		}
		// Shutdown fits in the grace period, after the preStop pause.
		timeout, err := time.ParseDuration(cmp.Or(env["AR_SHUTDOWN_TIMEOUT"], "10s"))
		if err != nil {
			r.add(w, "AR_SHUTDOWN_TIMEOUT: %v", err)
		}
		if ctr.Lifecycle != nil && ctr.Lifecycle.PreStop != nil && ctr.Lifecycle.PreStop.Sleep != nil {
			timeout += time.Duration(ctr.Lifecycle.PreStop.Sleep.Seconds) * time.Second
		}
		grace := time.Duration(cmp.Or(deref(w.template.Spec.TerminationGracePeriodSeconds), 30)) * time.Second
		if timeout >= grace {
			r.add(w, "preStop pause plus AR_SHUTDOWN_TIMEOUT (%v) does not fit in terminationGracePeriodSeconds (%v): the kubelet would kill a graceful stop", timeout, grace)
		}
	}
}

// checkAddress: rawURL names a Service that sends its port to want's
// container port (by name or number).
func checkAddress(r *report, c *cluster, w workload, key, rawURL, scheme string, want workload, port string) {
	u, err := url.Parse(strings.TrimSpace(rawURL))
	if err != nil || u.Hostname() == "" || u.Port() == "" {
		r.add(w, "%s %q is not a URL with host and port", key, rawURL)
		return
	}
	if scheme != "" && u.Scheme != scheme && u.Scheme != scheme+"s" {
		r.add(w, "%s %q: scheme %s, want %s", key, rawURL, u.Scheme, scheme)
	}
	n, _ := strconv.Atoi(u.Port())
	got, gotPort, err := resolve(c, u.Hostname(), n)
	if err != nil {
		r.add(w, "%s %q: %v", key, rawURL, err)
		return
	}
	wantPort := podPort(want.template.Spec, intstr.Parse(port))
	if got.String() != want.String() || gotPort != wantPort {
		r.add(w, "%s %q reaches %v port %d, want %v port %d", key, rawURL, got, gotPort, want, wantPort)
	}
}

// sources are who may open a connection to a pod on a port.
type sources struct {
	anyone bool            // no policy isolates the pod, or a rule admits every source
	pods   map[string]bool // pod templates in the namespace, by workload
}

// ingressSources evaluates the NetworkPolicies for traffic to pod template
// to on port, as the API defines it: a pod is isolated once a policy with
// an Ingress type selects it, and then admits the union of their rules.
func ingressSources(c *cluster, to workload, port int32) sources {
	s := sources{pods: map[string]bool{}}
	isolated := false
	for _, np := range find[*networkingv1.NetworkPolicy](c) {
		ingress := len(np.Spec.PolicyTypes) == 0 || slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress)
		if !ingress || !selectsOrAll(&np.Spec.PodSelector, to.template.Labels) {
			continue
		}
		isolated = true
		for _, rule := range np.Spec.Ingress {
			if len(rule.Ports) > 0 && !slices.ContainsFunc(rule.Ports, func(p networkingv1.NetworkPolicyPort) bool {
				if p.Protocol != nil && *p.Protocol != corev1.ProtocolTCP {
					return false
				}
				if p.Port == nil {
					return true
				}
				n := podPort(to.template.Spec, *p.Port)
				if p.Port.Type == intstr.Int {
					n = p.Port.IntVal
				}
				return n == port || (p.EndPort != nil && n <= port && port <= *p.EndPort)
			}) {
				continue
			}
			if len(rule.From) == 0 {
				s.anyone = true
			}
			for _, peer := range rule.From {
				if peer.IPBlock != nil || peer.NamespaceSelector != nil || peer.PodSelector == nil {
					s.anyone = true // beyond this namespace's pods
					continue
				}
				for _, w := range c.workloads() {
					if selectsOrAll(peer.PodSelector, w.template.Labels) {
						s.pods[w.String()] = true
					}
				}
			}
		}
	}
	if !isolated {
		s.anyone = true
	}
	return s
}

// selectsOrAll is selects, where an empty selector selects every pod.
func selectsOrAll(sel *metav1.LabelSelector, podLabels map[string]string) bool {
	if len(sel.MatchLabels) == 0 && len(sel.MatchExpressions) == 0 {
		return true
	}
	return selects(sel, podLabels)
}

// checkNetworkPolicies: NATS and Redis admit the agentruntime services and
// nothing else; the services and the collector admit what they must.
func checkNetworkPolicies(r *report, c *cluster, nats, redis, collector *workload, otlpPort int32) {
	if !slices.ContainsFunc(find[*networkingv1.NetworkPolicy](c), func(np *networkingv1.NetworkPolicy) bool {
		return selectsOrAll(&np.Spec.PodSelector, nil) && slices.Contains(np.Spec.PolicyTypes, networkingv1.PolicyTypeIngress) && len(np.Spec.Ingress) == 0
	}) {
		r.add("NetworkPolicy", "no default deny of ingress in the namespace")
	}
	services := map[string]bool{}
	for _, name := range all.Names {
		if w, ok := c.workload("Deployment", deploymentName(name)); ok {
			services[w.String()] = true
			if port := containerPort(w.container(serviceContainer), intstr.FromString("grpc")); port != 0 && !ingressSources(c, w, port).anyone {
				r.add(w, "gRPC port %d is closed to clients by the NetworkPolicies", port)
			}
		}
	}
	onlyServices := func(w *workload, portName string) {
		if w == nil {
			return
		}
		port := podPort(w.template.Spec, intstr.FromString(portName))
		s := ingressSources(c, *w, port)
		switch {
		case s.anyone:
			r.add(*w, "port %d (%s) is open beyond the agentruntime services", port, portName)
		case !maps.Equal(s.pods, services):
			r.add(*w, "port %d (%s) admits %v, want exactly the agentruntime services %v", port, portName, keys(s.pods), keys(services))
		}
	}
	onlyServices(nats, "client")
	onlyServices(redis, "redis")
	if nats != nil && nats.effectiveReplicas() > 1 {
		if port := podPort(nats.template.Spec, intstr.FromString("cluster")); !ingressSources(c, *nats, port).pods[nats.String()] {
			r.add(*nats, "cluster port %d is closed to the other NATS servers", port)
		}
	}
	if collector != nil && otlpPort != 0 {
		s := ingressSources(c, *collector, otlpPort)
		for svc := range services {
			if !s.anyone && !s.pods[svc] {
				r.add(*collector, "OTLP port %d is closed to %s", otlpPort, svc)
			}
		}
	}
}

func keys(m map[string]bool) []string {
	var out []string
	for k, v := range m {
		if v {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

// checkAuthFile: the auth file is in a Secret mounted into the container;
// when the overlay renders that Secret (development), the binary accepts
// the file. checked holds the Secrets already loaded.
func checkAuthFile(r *report, c *cluster, w workload, ctr *corev1.Container, file string, checked map[string]bool) {
	var secretName string
	for _, m := range ctr.VolumeMounts {
		i := slices.IndexFunc(w.template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if path.Dir(file) == m.MountPath && i >= 0 && w.template.Spec.Volumes[i].Secret != nil {
			secretName = w.template.Spec.Volumes[i].Secret.SecretName
		}
	}
	if secretName == "" {
		r.add(w, "AR_AUTH %s is not in a mounted Secret", file)
		return
	}
	s, ok := named[*corev1.Secret](c, secretName)
	if !ok || checked[secretName] {
		return // created outside the manifests, or done
	}
	checked[secretName] = true
	id := "Secret/" + secretName
	key := path.Base(file)
	data, ok := s.Data[key]
	if v, inString := s.StringData[key]; inString {
		data, ok = []byte(v), true
	}
	if !ok {
		r.add(id, "has no key %s (AR_AUTH)", key)
		return
	}
	dir, err := os.MkdirTemp("", "auth")
	if err != nil {
		r.add(id, "%v", err)
		return
	}
	defer os.RemoveAll(dir)
	local := filepath.Join(dir, key)
	if err := os.WriteFile(local, data, 0o600); err != nil {
		r.add(id, "%v", err)
		return
	}
	if _, err := auth.LoadConfig(local); err != nil {
		r.add(id, "the binary refuses %s: %v", key, err)
	}
}
