package k8s

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.starlark.net/starlark"
	"go.starlark.net/syntax"
	"go.yaml.in/yaml/v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/agentruntime/agentruntime/services/all"
)

// tiltDir is the Tiltfile's directory, relative to this package.
const tiltDir = "../../tilt"

// The contexts the Tiltfile may run against: the local clusters Tilt itself
// recognises, by name or by the prefix their tools give a context.
var (
	localContexts        = []string{"docker-desktop", "minikube", "rancher-desktop", "orbstack", "colima"}
	localContextPrefixes = []string{"kind-", "k3d-"}
)

func isLocalContext(name string) bool {
	return slices.Contains(localContexts, name) || slices.ContainsFunc(localContextPrefixes, func(p string) bool {
		return strings.HasPrefix(name, p) && len(name) > len(p)
	})
}

// tiltfile records what evaluating tilt/Tiltfile declared, through stubs
// with the signatures of Tilt's builtins (docs.tilt.dev/api.html): an
// argument Tilt does not have fails the evaluation, as it would in Tilt.
type tiltfile struct {
	dir     string // absolute
	context string
	dev     *cluster // what kustomize() renders: the dev overlay

	allowed   []string
	images    []tiltImage
	locals    []tiltLocal
	resources []tiltResource
	applied   bool
	// paths are every file or directory argument, absolute, with what
	// named it.
	paths []tiltPath
}

type tiltPath struct{ what, path string }

type tiltImage struct {
	ref, context, dockerfile string
	only                     []string // absolute
	syncs                    []liveUpdateStep
	runs                     []liveUpdateStep
}

type tiltLocal struct {
	name, cmd, dir string // dir absolute
	resourceDeps   []string
	labels         []string
}

type tiltResource struct {
	workload, newName string
	objects           []string
	resourceDeps      []string
	labels            []string
	portForwards      []portForward
}

func (r tiltResource) name() string {
	if r.newName != "" {
		return r.newName
	}
	return r.workload
}

// liveUpdateStep is what sync() and run() return.
type liveUpdateStep struct {
	kind          string // "sync" or "run"
	local, remote string // sync: local absolute
	cmd           string
	triggers      []string
}

func (s liveUpdateStep) String() string        { return "live_update_step(" + s.kind + ")" }
func (s liveUpdateStep) Type() string          { return "LiveUpdateStep" }
func (s liveUpdateStep) Freeze()               {}
func (s liveUpdateStep) Truth() starlark.Bool  { return true }
func (s liveUpdateStep) Hash() (uint32, error) { return 0, errors.New("unhashable") }

type portForward struct {
	local, container int
	name             string
}

func (p portForward) String() string {
	return fmt.Sprintf("port_forward(%d, %d)", p.local, p.container)
}
func (p portForward) Type() string          { return "PortForward" }
func (p portForward) Freeze()               {}
func (p portForward) Truth() starlark.Bool  { return true }
func (p portForward) Hash() (uint32, error) { return 0, errors.New("unhashable") }

// blob is Tilt's Blob: content, as opposed to a string naming a file.
type blob string

func (b blob) String() string        { return string(b) }
func (b blob) Type() string          { return "blob" }
func (b blob) Freeze()               {}
func (b blob) Truth() starlark.Bool  { return b != "" }
func (b blob) Hash() (uint32, error) { return starlark.String(b).Hash() }

// stringList unpacks Tilt's `Union[str, List[str]]` arguments.
type stringList []string

func (s *stringList) Unpack(v starlark.Value) error {
	switch v := v.(type) {
	case starlark.NoneType:
		return nil
	case starlark.String:
		*s = []string{string(v)}
		return nil
	case starlark.Indexable:
		for i := range v.Len() {
			str, ok := starlark.AsString(v.Index(i))
			if !ok {
				return fmt.Errorf("got %s in a list of strings", v.Index(i).Type())
			}
			*s = append(*s, str)
		}
		return nil
	}
	return fmt.Errorf("got %s, want string or list of strings", v.Type())
}

// evalTiltfile runs tilt/Tiltfile as Tilt would against a cluster whose
// kubectl context is context.
// src replaces the file's content when not nil (its paths still resolve
// from tilt/).
func evalTiltfile(t *testing.T, context string, dev *cluster, src []byte) (*tiltfile, error) {
	dir, err := filepath.Abs(tiltDir)
	require.NoError(t, err)
	tf := &tiltfile{dir: dir, context: context, dev: dev}
	thread := &starlark.Thread{
		Name:  "Tiltfile",
		Print: func(*starlark.Thread, string) {},
		// Extensions and other files are only what the repository holds:
		// Tilt would fetch an ext:// one from the network at load time.
		Load: func(_ *starlark.Thread, module string) (starlark.StringDict, error) {
			return nil, fmt.Errorf("load(%q): the Tiltfile loads nothing; vendor an extension into the repository before using it", module)
		},
	}
	// Tilt's dialect: top-level if/for, reassignment, while, sets.
	opts := &syntax.FileOptions{Set: true, While: true, TopLevelControl: true, GlobalReassign: true, Recursion: true}
	var source any
	if src != nil {
		source = src
	}
	_, err = starlark.ExecFileOptions(opts, thread, filepath.Join(dir, "Tiltfile"), source, tf.builtins())
	return tf, err
}

// abs resolves a Tiltfile path (relative to its directory) and records it.
func (tf *tiltfile) abs(what, p string) string {
	if !filepath.IsAbs(p) {
		p = filepath.Join(tf.dir, p)
	}
	tf.paths = append(tf.paths, tiltPath{what, p})
	return p
}

func (tf *tiltfile) builtins() starlark.StringDict {
	fn := func(name string, f func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error)) *starlark.Builtin {
		return starlark.NewBuiltin(name, func(_ *starlark.Thread, b *starlark.Builtin, args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			return f(args, kwargs)
		})
	}
	return starlark.StringDict{
		"TRIGGER_MODE_AUTO":   starlark.MakeInt(0),
		"TRIGGER_MODE_MANUAL": starlark.MakeInt(1),

		"k8s_context": fn("k8s_context", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			if err := starlark.UnpackArgs("k8s_context", args, kwargs); err != nil {
				return nil, err
			}
			return starlark.String(tf.context), nil
		}),
		"allow_k8s_contexts": fn("allow_k8s_contexts", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var contexts stringList
			if err := starlark.UnpackArgs("allow_k8s_contexts", args, kwargs, "contexts", &contexts); err != nil {
				return nil, err
			}
			tf.allowed = append(tf.allowed, contexts...)
			return starlark.None, nil
		}),
		"local_resource": fn("local_resource", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var (
				l                                  tiltLocal
				cmd, deps, resourceDeps, ignore    stringList
				labels, serveCmd, cmdBat, serveBat stringList
				triggerMode, links, env, serveEnv  starlark.Value
				probe                              starlark.Value
				autoInit, allowParallel            = true, false
				dir, serveDir                      string
			)
			if err := starlark.UnpackArgs("local_resource", args, kwargs,
				"name", &l.name, "cmd", &cmd, "deps?", &deps, "trigger_mode?", &triggerMode,
				"resource_deps?", &resourceDeps, "ignore?", &ignore, "auto_init?", &autoInit,
				"serve_cmd?", &serveCmd, "cmd_bat?", &cmdBat, "serve_cmd_bat?", &serveBat,
				"allow_parallel?", &allowParallel, "links?", &links, "labels?", &labels,
				"env?", &env, "serve_env?", &serveEnv, "readiness_probe?", &probe,
				"dir?", &dir, "serve_dir?", &serveDir); err != nil {
				return nil, err
			}
			l.cmd = strings.Join(cmd, " ")
			l.dir = tf.abs("local_resource "+l.name+" dir", dir)
			for _, d := range deps {
				tf.abs("local_resource "+l.name+" deps", d)
			}
			l.resourceDeps, l.labels = resourceDeps, labels
			tf.locals = append(tf.locals, l)
			return starlark.None, nil
		}),
		"docker_build": fn("docker_build", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var (
				img                                             tiltImage
				dockerfile                                      = "Dockerfile"
				only, ignore, entrypoint, ssh, secret, extraTag stringList
				cacheFrom, extraHosts                           stringList
				buildArgs, containerArgs, dockerfileContents    starlark.Value
				liveUpdate                                      *starlark.List
				matchInEnv, pull                                bool
				target, network, platform                       string
			)
			if err := starlark.UnpackArgs("docker_build", args, kwargs,
				"ref", &img.ref, "context", &img.context, "build_args?", &buildArgs,
				"dockerfile?", &dockerfile, "dockerfile_contents?", &dockerfileContents,
				"live_update?", &liveUpdate, "match_in_env_vars?", &matchInEnv,
				"ignore?", &ignore, "only?", &only, "entrypoint?", &entrypoint,
				"target?", &target, "ssh?", &ssh, "network?", &network, "secret?", &secret,
				"extra_tag?", &extraTag, "container_args?", &containerArgs,
				"cache_from?", &cacheFrom, "pull?", &pull, "platform?", &platform,
				"extra_hosts?", &extraHosts); err != nil {
				return nil, err
			}
			img.context = tf.abs("docker_build "+img.ref+" context", img.context)
			img.dockerfile = tf.abs("docker_build "+img.ref+" dockerfile", dockerfile)
			for _, o := range only {
				img.only = append(img.only, tf.abs("docker_build "+img.ref+" only", filepath.Join(img.context, o)))
			}
			if liveUpdate != nil {
				for i := range liveUpdate.Len() {
					step, ok := liveUpdate.Index(i).(liveUpdateStep)
					if !ok {
						return nil, fmt.Errorf("docker_build: live_update[%d] is a %s", i, liveUpdate.Index(i).Type())
					}
					if step.kind == "sync" {
						if len(img.runs) > 0 {
							return nil, errors.New("docker_build: sync() after run() in live_update")
						}
						img.syncs = append(img.syncs, step)
					} else {
						img.runs = append(img.runs, step)
					}
				}
			}
			tf.images = append(tf.images, img)
			return starlark.None, nil
		}),
		"sync": fn("sync", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var local, remote string
			if err := starlark.UnpackArgs("sync", args, kwargs, "local_path", &local, "remote_path", &remote); err != nil {
				return nil, err
			}
			return liveUpdateStep{kind: "sync", local: tf.abs("sync", local), remote: remote}, nil
		}),
		"run": fn("run", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var (
				cmd, trigger stringList
				echoOff      bool
			)
			if err := starlark.UnpackArgs("run", args, kwargs, "cmd", &cmd, "trigger?", &trigger, "echo_off?", &echoOff); err != nil {
				return nil, err
			}
			step := liveUpdateStep{kind: "run", cmd: strings.Join(cmd, " ")}
			for _, tr := range trigger {
				step.triggers = append(step.triggers, tf.abs("run trigger", tr))
			}
			return step, nil
		}),
		"kustomize": fn("kustomize", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var (
				dir, bin string
				flags    stringList
			)
			if err := starlark.UnpackArgs("kustomize", args, kwargs, "pathToDir", &dir, "kustomize_bin?", &bin, "flags?", &flags); err != nil {
				return nil, err
			}
			want, _ := filepath.Abs(overlayDir(".", "dev"))
			if got := tf.abs("kustomize", dir); got != want {
				return nil, fmt.Errorf("kustomize(%q): the Tiltfile deploys %s, want the dev overlay", dir, got)
			}
			y, err := tf.dev.yaml()
			return blob(y), err
		}),
		"k8s_yaml": fn("k8s_yaml", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var (
				y         starlark.Value
				duplicate bool
			)
			if err := starlark.UnpackArgs("k8s_yaml", args, kwargs, "yaml", &y, "allow_duplicates?", &duplicate); err != nil {
				return nil, err
			}
			if _, ok := y.(blob); !ok {
				return nil, fmt.Errorf("k8s_yaml(%s): want the kustomize() blob of the dev overlay", y.Type())
			}
			tf.applied = true
			return starlark.None, nil
		}),
		"decode_yaml_stream": fn("decode_yaml_stream", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var y starlark.Value
			if err := starlark.UnpackArgs("decode_yaml_stream", args, kwargs, "yaml", &y); err != nil {
				return nil, err
			}
			return decodeYAMLStream(y.String())
		}),
		"k8s_resource": fn("k8s_resource", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var (
				r                                 tiltResource
				objects, resourceDeps, labels     stringList
				portForwards                      starlark.Value
				extraSelectors, triggerMode, link starlark.Value
				autoInit                          = true
				podReadiness, discovery           string
			)
			if err := starlark.UnpackArgs("k8s_resource", args, kwargs,
				"workload?", &r.workload, "new_name?", &r.newName, "port_forwards?", &portForwards,
				"extra_pod_selectors?", &extraSelectors, "trigger_mode?", &triggerMode,
				"resource_deps?", &resourceDeps, "objects?", &objects, "auto_init?", &autoInit,
				"pod_readiness?", &podReadiness, "links?", &link, "labels?", &labels,
				"discovery_strategy?", &discovery); err != nil {
				return nil, err
			}
			r.objects, r.resourceDeps, r.labels = objects, resourceDeps, labels
			if portForwards != nil {
				list, ok := portForwards.(*starlark.List)
				if !ok {
					return nil, fmt.Errorf("k8s_resource: port_forwards is a %s; this check reads lists of port_forward()", portForwards.Type())
				}
				for i := range list.Len() {
					pf, ok := list.Index(i).(portForward)
					if !ok {
						return nil, fmt.Errorf("k8s_resource: port_forwards[%d] is a %s, want port_forward()", i, list.Index(i).Type())
					}
					r.portForwards = append(r.portForwards, pf)
				}
			}
			tf.resources = append(tf.resources, r)
			return starlark.None, nil
		}),
		"port_forward": fn("port_forward", func(args starlark.Tuple, kwargs []starlark.Tuple) (starlark.Value, error) {
			var (
				pf                   portForward
				name, linkPath, host string
			)
			if err := starlark.UnpackArgs("port_forward", args, kwargs,
				"local_port", &pf.local, "container_port?", &pf.container, "name?", &name,
				"link_path?", &linkPath, "host?", &host); err != nil {
				return nil, err
			}
			pf.name = name
			if pf.container == 0 {
				pf.container = pf.local
			}
			return pf, nil
		}),
	}
}

// decodeYAMLStream is Tilt's decode_yaml_stream: each document as
// starlark dicts, lists and scalars.
func decodeYAMLStream(s string) (starlark.Value, error) {
	dec := yaml.NewDecoder(strings.NewReader(s))
	var docs []starlark.Value
	for {
		var doc any
		if err := dec.Decode(&doc); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		if doc == nil {
			continue
		}
		v, err := toStarlark(doc)
		if err != nil {
			return nil, err
		}
		docs = append(docs, v)
	}
	return starlark.NewList(docs), nil
}

func toStarlark(v any) (starlark.Value, error) {
	switch v := v.(type) {
	case nil:
		return starlark.None, nil
	case bool:
		return starlark.Bool(v), nil
	case int:
		return starlark.MakeInt(v), nil
	case float64:
		return starlark.Float(v), nil
	case string:
		return starlark.String(v), nil
	case []any:
		var out []starlark.Value
		for _, e := range v {
			s, err := toStarlark(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return starlark.NewList(out), nil
	case map[string]any:
		d := starlark.NewDict(len(v))
		for _, k := range slices.Sorted(maps.Keys(v)) {
			s, err := toStarlark(v[k])
			if err != nil {
				return nil, err
			}
			if err := d.SetKey(starlark.String(k), s); err != nil {
				return nil, err
			}
		}
		return d, nil
	}
	return nil, fmt.Errorf("cannot convert %T", v)
}

// outputs are the files local_resources build: `-o path` in their command,
// relative to their directory.
func (tf *tiltfile) outputs() []string {
	var out []string
	for _, l := range tf.locals {
		if m := regexp.MustCompile(`(?:^|\s)-o\s+(\S+)`).FindStringSubmatch(l.cmd); m != nil {
			out = append(out, filepath.Join(l.dir, m[1]))
		}
	}
	return out
}

func within(dir, p string) bool {
	rel, err := filepath.Rel(dir, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, "../")
}

// checkTiltfile holds what the Tiltfile declared to the rendered dev
// overlay and the repository, and returns every mismatch.
func checkTiltfile(tf *tiltfile, dev *cluster) []string {
	r := &report{}
	if !slices.Contains(tf.allowed, tf.context) {
		r.add("allow_k8s_contexts", "does not allow the current context %s", tf.context)
	}
	for _, c := range tf.allowed {
		if !isLocalContext(c) {
			r.add("allow_k8s_contexts", "allows %q, which is not a local cluster", c)
		}
	}

	// Every path exists, or a local_resource builds it.
	built := tf.outputs()
	for _, p := range tf.paths {
		if !slices.Contains(built, p.path) && !fileExists(p.path) {
			r.add(p.what, "names %s, which does not exist and nothing builds", p.path)
		}
	}
	if !tf.applied {
		r.add("k8s_yaml", "the dev overlay is never applied")
	}

	// Images: what the dev overlay runs; Tilt matches by name and injects
	// its own tag.
	used := map[string]bool{}
	for _, w := range dev.workloads() {
		for _, c := range w.template.Spec.Containers {
			used[repository(c.Image)] = true
		}
	}
	for _, img := range tf.images {
		if !used[img.ref] {
			r.add("docker_build("+img.ref+")", "builds an image no workload of the dev overlay runs")
		}
	}
	for _, name := range all.Names {
		w, ok := dev.workload("Deployment", deploymentName(name))
		if !ok || w.container(serviceContainer) == nil {
			continue // the manifest checks report it
		}
		ref := repository(w.container(serviceContainer).Image)
		if !slices.ContainsFunc(tf.images, func(i tiltImage) bool { return i.ref == ref }) {
			r.add("service "+name, "nothing builds its image %s", ref)
		}
	}

	for _, img := range tf.images {
		checkImageBuild(r, tf, dev, img, built)
	}
	checkTiltResources(r, tf, dev)
	return r.problems
}

// checkImageBuild: the Dockerfile is pinned and non-root, copies only what
// the build context holds, and live update syncs a built file onto a
// writable volume (the root filesystem is read-only) and restarts.
func checkImageBuild(r *report, tf *tiltfile, dev *cluster, img tiltImage, built []string) {
	id := "docker_build(" + img.ref + ")"
	data, err := os.ReadFile(img.dockerfile)
	if err != nil {
		r.add(id, "%v", err)
		return
	}
	stages, err := parseDockerfile(data)
	if err != nil {
		r.add(id, "%s: %v", img.dockerfile, err)
		return
	}
	for _, s := range stages {
		if p := imageProblem(s.from); p != "" {
			r.add(id, "%s: FROM %s %s", img.dockerfile, s.from, p)
		}
	}
	if p := rootUser(stages[len(stages)-1]); p != "" {
		r.add(id, "%s: %s", img.dockerfile, p)
	}
	inContext := func(p string) bool {
		return slices.ContainsFunc(img.only, func(o string) bool { return within(o, p) }) || (len(img.only) == 0 && within(img.context, p))
	}
	for _, src := range copySources(stages) {
		if !inContext(filepath.Join(img.context, src)) {
			r.add(id, "%s copies %s, which only= leaves out of the context", img.dockerfile, src)
		}
	}
	for _, s := range img.syncs {
		if !within(img.context, s.local) || !inContext(s.local) {
			r.add(id, "sync(%s) is outside what the build watches", s.local)
		}
		if !slices.Contains(built, s.local) && !fileExists(s.local) {
			r.add(id, "sync(%s) syncs nothing built", s.local)
		}
		for _, w := range dev.workloads() {
			for _, c := range w.template.Spec.Containers {
				if repository(c.Image) == img.ref && !onWritableVolume(w, c, s.remote) {
					r.add(id, "sync to %s: not on a writable volume of %v, whose root filesystem is read-only", s.remote, w)
				}
			}
		}
	}
	if len(img.syncs) > 0 && len(img.runs) == 0 {
		r.add(id, "live update syncs but never restarts the process")
	}
}

// checkTiltResources: resources name rendered workloads and objects, group
// every object, depend on resources that exist, carry labels, and forward
// ports the containers expose.
func checkTiltResources(r *report, tf *tiltfile, dev *cluster) {
	names := map[string]bool{}
	for _, l := range tf.locals {
		names[l.name] = true
		if len(l.labels) == 0 {
			r.add("local_resource "+l.name, "has no label")
		}
	}
	workloads := map[string]workload{}
	for _, w := range dev.workloads() {
		workloads[w.name] = w
	}
	claimed := map[string]string{}
	forwarded := map[int]string{}
	for _, res := range tf.resources {
		id := "k8s_resource " + res.name()
		names[res.name()] = true
		if len(res.labels) == 0 {
			r.add(id, "has no label")
		}
		if _, ok := workloads[res.workload]; res.workload != "" && !ok {
			r.add(id, "names no workload of the dev overlay")
		}
		if res.workload == "" && len(res.objects) == 0 {
			r.add(id, "new resource without objects")
		}
		for _, sel := range res.objects {
			matches := selectObjects(dev, sel)
			if len(matches) != 1 {
				r.add(id, "object selector %q matches %d objects, want 1", sel, len(matches))
				continue
			}
			if prev := claimed[matches[0].String()]; prev != "" {
				r.add(id, "%v is already in %s", matches[0], prev)
			}
			claimed[matches[0].String()] = res.name()
		}
		for _, pf := range res.portForwards {
			if w, ok := workloads[res.workload]; !ok || podPortNumber(w, pf.container) == 0 {
				r.add(id, "forwards port %d, which no container of it exposes", pf.container)
			}
			if prev := forwarded[pf.local]; prev != "" {
				r.add(id, "local port %d is already forwarded by %s", pf.local, prev)
			}
			forwarded[pf.local] = res.name()
		}
	}
	for name := range workloads {
		if !slices.ContainsFunc(tf.resources, func(res tiltResource) bool { return res.workload == name }) {
			r.add("workload "+name, "has no k8s_resource")
		}
	}
	// Tilt attaches Services to their workloads; everything else must be
	// grouped with an owner, or it lands in "uncategorized".
	for _, o := range dev.objects {
		if o.kind == "Service" || slices.ContainsFunc(dev.workloads(), func(w workload) bool { return w.object.String() == o.String() }) {
			continue
		}
		if claimed[o.String()] == "" {
			r.add(o, "is in no Tilt resource")
		}
	}
	for _, deps := range resourceDepsOf(tf) {
		for _, d := range deps {
			if !names[d] {
				r.add("resource_deps", "names %q, which is no resource", d)
			}
		}
	}
	for _, name := range all.Names {
		i := slices.IndexFunc(tf.resources, func(res tiltResource) bool { return res.workload == deploymentName(name) })
		if i < 0 || !slices.ContainsFunc(tf.resources[i].portForwards, func(p portForward) bool { return p.container == 7070 }) {
			r.add("service "+name, "its gRPC port is not forwarded")
		}
	}
}

func TestTiltfile(t *testing.T) {
	t.Parallel()
	dev, err := rendered("dev")
	require.NoError(t, err)
	tf, err := evalTiltfile(t, "kind-agentruntime", dev, nil)
	require.NoError(t, err)
	require.NotEmpty(t, tf.images)
	require.NotEmpty(t, tf.resources)
	assert.Empty(t, checkTiltfile(tf, dev))
}

// The Tiltfile checks have teeth: each mistake, alone, is reported.
func TestTiltfileChecksCatchMistakes(t *testing.T) {
	t.Parallel()
	source, err := os.ReadFile(filepath.Join(tiltDir, "Tiltfile"))
	require.NoError(t, err)
	dev, err := rendered("dev")
	require.NoError(t, err)
	for _, m := range []struct{ name, old, new, want string }{
		{"unknown workload", "'agentruntime-' + service,", "'agentruntime-svc-' + service,", "k8s_resource agentruntime-svc-control: names no workload of the dev overlay"},
		{"image the overlay does not run", "    'agentruntime',\n    context='.',", "    'agentruntime-dev',\n    context='.',", "docker_build(agentruntime-dev): builds an image no workload of the dev overlay runs"},
		{"missing path", "'../services'],", "'../service'],", "local_resource agentruntime-binary deps: names "},
		{"sync onto the read-only root", "sync(BINARY, '/app/sync/agentruntime')", "sync(BINARY, '/opt/agentruntime/agentruntime')", "sync to /opt/agentruntime/agentruntime: not on a writable volume"},
		{"sync of a file no build makes", "sync(BINARY, ", "sync('.build/agentruntime-linux', ", "agentruntime-linux) syncs nothing built"},
		{"resource dependency that does not exist", "resource_deps=['agentruntime-binary', ", "resource_deps=['agentruntime-build', ", `resource_deps: names "agentruntime-build", which is no resource`},
		{"object selector that matches nothing", "selector = '%s:%s' % (obj['metadata']['name'], obj['kind'].lower())", "selector = '%s:%s' % (obj['metadata']['name'], 'deployment')", "matches 0 objects, want 1"},
		{"port no container exposes", "port_forward(7070 + i, 7070,", "port_forward(7070 + i, 7071,", "forwards port 7071, which no container of it exposes"},
		{"ungrouped resource", "    labels=['telemetry'],\n", "", "k8s_resource otel-collector: has no label"},
		{"remote context allowed", "allow_k8s_contexts(LOCAL_CONTEXTS + [CONTEXT])", "allow_k8s_contexts(LOCAL_CONTEXTS + [CONTEXT, 'gke_acme_prod'])", `allows "gke_acme_prod", which is not a local cluster`},
	} {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, 1, strings.Count(string(source), m.old), "the Tiltfile must contain the text to break exactly once:\n%s", m.old)
			tf, err := evalTiltfile(t, "kind-agentruntime", dev, []byte(strings.Replace(string(source), m.old, m.new, 1)))
			require.NoError(t, err)
			problems := checkTiltfile(tf, dev)
			assert.True(t, containsSubstring(problems, m.want), "want a problem containing\n  %s\ngot\n  %s", m.want, strings.Join(problems, "\n  "))
		})
	}
	t.Run("extension loaded at run time", func(t *testing.T) {
		t.Parallel()
		src := "load('ext://restart_process', 'docker_build_with_restart')\n" + string(source)
		_, err := evalTiltfile(t, "kind-agentruntime", dev, []byte(src))
		if assert.Error(t, err) {
			assert.Contains(t, err.Error(), "vendor an extension")
		}
	})
}

// The Tiltfile refuses to run against anything but a local cluster.
func TestTiltfileRefusesRemoteClusters(t *testing.T) {
	t.Parallel()
	dev, err := rendered("dev")
	require.NoError(t, err)
	for _, context := range []string{"gke_acme_europe-west1_prod", "arn:aws:eks:us-east-1:123456789012:cluster/prod", "prod", "kind-"} {
		_, err := evalTiltfile(t, context, dev, nil)
		if assert.Error(t, err, context) {
			assert.Contains(t, err.Error(), "is not a local cluster", context)
		}
	}
	for _, context := range []string{"kind-kind", "k3d-agentruntime", "docker-desktop", "minikube"} {
		_, err := evalTiltfile(t, context, dev, nil)
		assert.NoError(t, err, context)
	}
}

func resourceDepsOf(tf *tiltfile) [][]string {
	var out [][]string
	for _, l := range tf.locals {
		out = append(out, l.resourceDeps)
	}
	for _, r := range tf.resources {
		out = append(out, r.resourceDeps)
	}
	return out
}

// selectObjects applies Tilt's object selector, name[:kind[:namespace]],
// each part matched whole and case-insensitively.
func selectObjects(c *cluster, selector string) []object {
	parts := strings.Split(selector, ":")
	var out []object
	for _, o := range c.objects {
		want := []string{o.name, o.kind, o.namespace}
		match := len(parts) <= 3
		for i, p := range parts {
			if i < len(want) && !strings.EqualFold(p, want[i]) {
				match = false
			}
		}
		if match {
			out = append(out, o)
		}
	}
	return out
}

func podPortNumber(w workload, port int) int32 {
	for _, c := range w.template.Spec.Containers {
		for _, p := range c.Ports {
			if int(p.ContainerPort) == port {
				return p.ContainerPort
			}
		}
	}
	return 0
}

// onWritableVolume: p is under a mount of an emptyDir (or a claim) that is
// not read-only.
func onWritableVolume(w workload, c corev1.Container, p string) bool {
	for _, m := range c.VolumeMounts {
		if m.ReadOnly || !within(m.MountPath, p) {
			continue
		}
		for _, v := range w.template.Spec.Volumes {
			if v.Name == m.Name && v.EmptyDir != nil {
				return true
			}
		}
	}
	return false
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
