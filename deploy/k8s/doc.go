// Package k8s owns the Kubernetes deployment of agentruntime: the kustomize
// base and overlays under this directory, and the offline checks that keep
// them deployable.
//
// The package has no code of its own; its tests are the point. They render
// overlays/dev and overlays/prod with the kustomize Go API, decode every
// object strictly with client-go's scheme (an unknown or misspelt field
// fails), and hold the rendered objects to the rules in docs/kubernetes.md:
// every service has a Deployment and a Service, probes ask the service's own
// health name on a port the container exposes, images are pinned, resources
// and security contexts are set, selectors select, configuration points at
// objects that exist, and only the services reach NATS and Redis. A second
// set of tests breaks the manifests on purpose, one rule at a time, to prove
// the checks fail when they should. tilt/Tiltfile is evaluated against stubs
// of Tilt's builtins, and the Dockerfile is read for its rules.
package k8s
