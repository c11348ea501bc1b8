package k8s

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/agentruntime/agentruntime/services/all"
)

// overlayDir is where an overlay lives under root (this directory, or a
// copy of it).
func overlayDir(root, overlay string) string { return filepath.Join(root, "overlays", overlay) }

// check renders an overlay under root and returns every problem found:
// what does not decode, then what breaks a rule.
func check(root string, e expectations) []string {
	c, err := render(overlayDir(root, e.overlay))
	var problems []string
	if err != nil {
		problems = append(problems, strings.Split(err.Error(), "\n")...)
	}
	if c == nil {
		return problems
	}
	return append(problems, validate(c, e)...)
}

func TestOverlaysFollowTheRules(t *testing.T) {
	t.Parallel()
	for _, e := range overlays {
		t.Run(e.overlay, func(t *testing.T) {
			t.Parallel()
			c, err := rendered(e.overlay)
			require.NoError(t, err)
			assert.Empty(t, validate(c, e))
		})
	}
}

// The rules themselves name the five services and their health names; a
// sixth service must be added to both before it can be deployed.
func TestHealthNamesCoverEveryService(t *testing.T) {
	t.Parallel()
	require.Len(t, healthNames, len(all.Names))
	for _, name := range all.Names {
		assert.True(t, strings.HasPrefix(healthNames[name], "agentruntime."+name+".v1."), "%s: %s", name, healthNames[name])
	}
}

// Both overlays carry every service, NATS with JetStream and Redis, with
// the counts the overlays promise.
func TestOverlaysCarryEveryComponent(t *testing.T) {
	t.Parallel()
	for _, e := range overlays {
		t.Run(e.overlay, func(t *testing.T) {
			t.Parallel()
			c, err := rendered(e.overlay)
			require.NoError(t, err)
			var deployments []string
			for _, w := range c.workloads() {
				deployments = append(deployments, w.String())
			}
			for _, name := range all.Names {
				assert.Contains(t, deployments, "Deployment/"+deploymentName(name))
			}
			assert.Contains(t, deployments, "StatefulSet/nats")
			assert.Contains(t, deployments, "StatefulSet/redis")
			assert.Contains(t, deployments, "Deployment/otel-collector")

			nats, _ := c.workload("StatefulSet", "nats")
			assert.Equal(t, e.natsReplicas, nats.effectiveReplicas())
			for _, name := range all.Names {
				w, _ := c.workload("Deployment", deploymentName(name))
				n := minimumReplicas(c, w)
				assert.True(t, n >= e.minServiceReplicas && n <= e.maxServiceReplicas, "%s runs %d", name, n)
			}
		})
	}
}

func TestImageReferences(t *testing.T) {
	t.Parallel()
	for image, problem := range map[string]string{
		"nats:2.15.2-alpine":                 "",
		"ghcr.io/a/b:v1@sha256:0123":         "",
		"registry:5000/a/b@sha256:abcd":      "",
		"redis":                              "has no tag",
		"redis:latest":                       "latest",
		"registry:5000/redis":                "has no tag",
		"ghcr.io/agentruntime/agentruntime:": "has no tag",
		"ghcr.io/a/b@md5:12":                 "malformed digest",
	} {
		got := imageProblem(image)
		if problem == "" {
			assert.Empty(t, got, image)
		} else {
			assert.Contains(t, got, problem, image)
		}
	}
	assert.Equal(t, "nats", repository("docker.io/library/nats:2.15.2-alpine"))
	assert.True(t, slices.Contains([]string{"otel/opentelemetry-collector"}, repository("otel/opentelemetry-collector:0.161.0")))
}
