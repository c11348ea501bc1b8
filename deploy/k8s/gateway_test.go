package k8s

import (
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"github.com/agentruntime/agentruntime/services/all"
)

// frontDoorGateway is the Gateway clients and workers use as their one
// address.
const frontDoorGateway = "agentruntime"

// healthServiceHeader is the header a health check names its service in
// (pkg/endpoints sends it), since a route cannot read the request body.
const healthServiceHeader = "agentruntime-service"

// grpcInfraServices may be routed besides the five: health and reflection.
var grpcInfraServices = []string{"grpc.health.v1.Health", "grpc.reflection.v1.ServerReflection", "grpc.reflection.v1alpha.ServerReflection"}

// checkGateway: one Gateway with a gRPC-capable listener; per service a
// GRPCRoute attached to it that sends the service's methods, and health
// checks carrying its name, to its own Service on a port the Service has;
// every route names only gRPC services that exist and Services that exist.
func checkGateway(r *report, c *cluster) {
	gw, ok := named[*gatewayv1.Gateway](c, frontDoorGateway)
	if !ok {
		r.add("front door", "has no Gateway %s", frontDoorGateway)
		return
	}
	if gw.Spec.GatewayClassName == "" {
		r.add("Gateway/"+gw.Name, "names no gatewayClassName")
	}
	if !slices.ContainsFunc(gw.Spec.Listeners, func(l gatewayv1.Listener) bool {
		return l.Protocol == gatewayv1.HTTPProtocolType || l.Protocol == gatewayv1.HTTPSProtocolType
	}) {
		r.add("Gateway/"+gw.Name, "has no HTTP or HTTPS listener to carry gRPC")
	}

	known := slices.Clone(grpcInfraServices)
	for _, name := range all.Names {
		known = append(known, healthNames[name])
	}
	// What each gRPC service name is routed to, and health by header.
	routedTo := map[string][]string{}
	healthTo := map[string][]string{}
	for _, route := range find[*gatewayv1.GRPCRoute](c) {
		id := "GRPCRoute/" + route.Name
		if !slices.ContainsFunc(route.Spec.ParentRefs, func(p gatewayv1.ParentReference) bool { return string(p.Name) == gw.Name }) {
			r.add(id, "is not attached to Gateway %s", gw.Name)
		}
		for _, rule := range route.Spec.Rules {
			var backends []string
			for _, b := range rule.BackendRefs {
				if b.Kind != nil && *b.Kind != "Service" {
					r.add(id, "routes to a %s, want a Service", *b.Kind)
					continue
				}
				svc, ok := named[*corev1.Service](c, string(b.Name))
				switch {
				case !ok:
					r.add(id, "routes to Service %s, which does not exist", b.Name)
					continue
				case b.Port == nil || !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Port == *b.Port }):
					r.add(id, "routes to Service %s on port %d, which it does not have", b.Name, deref(b.Port))
					continue
				}
				backends = append(backends, string(b.Name))
			}
			for _, m := range rule.Matches {
				if m.Method == nil || m.Method.Service == nil {
					r.add(id, "has a match without a gRPC service name")
					continue
				}
				service := *m.Method.Service
				if !slices.Contains(known, service) {
					r.add(id, "matches gRPC service %q, which no agentruntime service serves", service)
					continue
				}
				header := ""
				for _, h := range m.Headers {
					if string(h.Name) == healthServiceHeader {
						header = h.Value
					}
				}
				if service == "grpc.health.v1.Health" && header != "" {
					healthTo[header] = append(healthTo[header], backends...)
					continue
				}
				routedTo[service] = append(routedTo[service], backends...)
			}
		}
	}
	for _, name := range all.Names {
		want := deploymentName(name)
		if got := routedTo[healthNames[name]]; !slices.Equal(got, []string{want}) {
			r.add("front door", "%s is routed to %v, want [%s]", healthNames[name], got, want)
		}
		if got := healthTo[name]; !slices.Equal(got, []string{want}) {
			r.add("front door", "health checks of %s (header %s: %s) go to %v, want [%s]", name, healthServiceHeader, name, got, want)
		}
	}
}

// checkGatewayTLS: every listener of the front door is HTTPS and
// terminates TLS with a Secret a cert-manager Certificate of the rendering
// keeps, issued for the listener's host name, and renewed before it
// expires.
func checkGatewayTLS(r *report, c *cluster) {
	gw, ok := named[*gatewayv1.Gateway](c, frontDoorGateway)
	if !ok {
		return // checkGateway reports it
	}
	for _, l := range gw.Spec.Listeners {
		id := "Gateway/" + gw.Name + " listener " + string(l.Name)
		if l.Protocol != gatewayv1.HTTPSProtocolType || l.TLS == nil || l.TLS.Mode == nil || *l.TLS.Mode != gatewayv1.TLSModeTerminate {
			r.add(id, "does not terminate TLS (protocol %s): credentials would reach it in clear", l.Protocol)
			continue
		}
		if l.Hostname == nil {
			r.add(id, "names no hostname for its certificate")
			continue
		}
		if len(l.TLS.CertificateRefs) == 0 {
			r.add(id, "has no certificateRefs")
		}
		for _, ref := range l.TLS.CertificateRefs {
			if ref.Kind != nil && *ref.Kind != "Secret" {
				r.add(id, "certificateRef %s is a %s, want a Secret", ref.Name, *ref.Kind)
				continue
			}
			i := slices.IndexFunc(c.certificates, func(cert certificate) bool { return cert.Spec.SecretName == string(ref.Name) })
			if i < 0 {
				r.add(id, "terminates TLS with Secret %s, which no cert-manager Certificate keeps", ref.Name)
				continue
			}
			cert := c.certificates[i]
			if !slices.Contains(cert.Spec.DNSNames, string(*l.Hostname)) {
				r.add("Certificate/"+cert.Metadata.Name, "is not issued for %s (dnsNames %v), the listener's hostname", *l.Hostname, cert.Spec.DNSNames)
			}
			if cert.Spec.IssuerRef.Name == "" {
				r.add("Certificate/"+cert.Metadata.Name, "names no issuer")
			}
			if cert.Spec.RenewBefore == "" {
				r.add("Certificate/"+cert.Metadata.Name, "sets no renewBefore")
			}
		}
	}
}

// serviceTLSSecret is the Secret cert-manager keeps the services'
// certificate in (prod).
const serviceTLSSecret = "agentruntime-tls"

// checkServiceTLS: every service serves TLS (AR_TLS_CERT, AR_TLS_KEY) from
// a mounted Secret a cert-manager Certificate keeps, issued for the names
// the Service is called by; never AR_INSECURE_PLAINTEXT; and the Gateway
// is told to speak TLS to it and for which name (a BackendTLSPolicy).
func checkServiceTLS(r *report, c *cluster) {
	policies := find[*gatewayv1.BackendTLSPolicy](c)
	for _, name := range all.Names {
		w, ok := c.workload("Deployment", deploymentName(name))
		if !ok || w.container(serviceContainer) == nil {
			continue // reported by checkAgentruntime
		}
		ctr := w.container(serviceContainer)
		env := serviceEnv(c, ctr)
		if env["AR_INSECURE_PLAINTEXT"] == "true" {
			r.add(w, "AR_INSECURE_PLAINTEXT is true: credentials would cross the network in clear")
		}
		var secrets []string
		for _, k := range []string{"AR_TLS_CERT", "AR_TLS_KEY"} {
			file := env[k]
			if file == "" {
				r.add(w, "%s is not set: the service would take credentials in clear", k)
				continue
			}
			secret := ""
			for _, m := range ctr.VolumeMounts {
				i := slices.IndexFunc(w.template.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
				if path.Dir(file) == m.MountPath && i >= 0 && w.template.Spec.Volumes[i].Secret != nil {
					secret = w.template.Spec.Volumes[i].Secret.SecretName
				}
			}
			if secret == "" {
				r.add(w, "%s %s is not in a mounted Secret", k, file)
				continue
			}
			secrets = append(secrets, secret)
		}
		svcName := deploymentName(name)
		var dnsNames []string
		for _, secret := range slices.Compact(secrets) {
			i := slices.IndexFunc(c.certificates, func(cert certificate) bool { return cert.Spec.SecretName == secret })
			if i < 0 {
				r.add(w, "serves TLS from Secret %s, which no cert-manager Certificate keeps", secret)
				continue
			}
			dnsNames = c.certificates[i].Spec.DNSNames
			for _, want := range []string{svcName, svcName + "." + namespace + ".svc", svcName + "." + namespace + ".svc.cluster.local"} {
				if !slices.Contains(dnsNames, want) {
					r.add("Certificate/"+c.certificates[i].Metadata.Name, "is not issued for %s, a name of Service %s", want, svcName)
				}
			}
		}
		i := slices.IndexFunc(policies, func(p *gatewayv1.BackendTLSPolicy) bool {
			return slices.ContainsFunc(p.Spec.TargetRefs, func(t gatewayv1.LocalPolicyTargetReferenceWithSectionName) bool {
				return t.Kind == "Service" && string(t.Name) == svcName
			})
		})
		if i < 0 {
			r.add("Service/"+svcName, "serves TLS, but no BackendTLSPolicy tells the Gateway to speak TLS to it")
			continue
		}
		p := policies[i]
		if host := string(p.Spec.Validation.Hostname); dnsNames != nil && !slices.Contains(dnsNames, host) {
			r.add("BackendTLSPolicy/"+p.Name, "expects hostname %s, which the service's certificate does not name", host)
		}
		if len(p.Spec.Validation.CACertificateRefs) == 0 && p.Spec.Validation.WellKnownCACertificates == nil {
			r.add("BackendTLSPolicy/"+p.Name, "names no CA to verify the service against")
		}
	}
}
