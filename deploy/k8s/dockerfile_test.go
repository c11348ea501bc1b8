package k8s

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// repoRoot is the repository, relative to this package.
const repoRoot = "../.."

// stage is one FROM of a Dockerfile and the instructions under it.
type stage struct {
	from, name   string
	instructions []instruction
}

type instruction struct{ cmd, args string }

// parseDockerfile reads instructions (continuation lines joined, comments
// dropped) into stages. FROM may use ARGs declared before the first FROM.
func parseDockerfile(data []byte) ([]stage, error) {
	text := regexp.MustCompile(`\\\n`).ReplaceAllString(string(data), " ")
	args := map[string]string{}
	var stages []stage
	for line := range strings.Lines(text) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		cmd, rest, _ := strings.Cut(line, " ")
		cmd, rest = strings.ToUpper(cmd), strings.TrimSpace(rest)
		switch {
		case cmd == "ARG" && len(stages) == 0:
			name, value, _ := strings.Cut(rest, "=")
			args[name] = value
		case cmd == "FROM":
			s := stage{}
			fields := strings.Fields(os.Expand(rest, func(k string) string { return args[k] }))
			for i := 0; i < len(fields); i++ {
				switch {
				case strings.HasPrefix(fields[i], "--"):
				case strings.EqualFold(fields[i], "AS") && i+1 < len(fields):
					s.name = fields[i+1]
					i++
				default:
					s.from = fields[i]
				}
			}
			stages = append(stages, s)
		default:
			if len(stages) == 0 {
				return nil, fmt.Errorf("%s before FROM", cmd)
			}
			stages[len(stages)-1].instructions = append(stages[len(stages)-1].instructions, instruction{cmd, rest})
		}
	}
	if len(stages) == 0 {
		return nil, errors.New("no FROM")
	}
	return stages, nil
}

// copySources are the build-context paths COPY and ADD read (not those
// copied from another stage).
func copySources(stages []stage) []string {
	var out []string
	for _, s := range stages {
		for _, in := range s.instructions {
			if in.cmd != "COPY" && in.cmd != "ADD" {
				continue
			}
			var operands []string
			fromStage := false
			for _, f := range strings.Fields(in.args) {
				if strings.HasPrefix(f, "--from=") {
					fromStage = true
				}
				if !strings.HasPrefix(f, "--") {
					operands = append(operands, f)
				}
			}
			if !fromStage && len(operands) > 1 {
				out = append(out, operands[:len(operands)-1]...)
			}
		}
	}
	return out
}

// rootUser says why the stage would run as root, or "".
func rootUser(s stage) string {
	user := ""
	for _, in := range s.instructions {
		if in.cmd == "USER" {
			user = in.args
		}
	}
	name, _, _ := strings.Cut(user, ":")
	switch name {
	case "":
		return "no USER: the image runs as root"
	case "0", "root":
		return "USER " + user + " is root"
	}
	return ""
}

func (s stage) all(cmd string) []string {
	var out []string
	for _, in := range s.instructions {
		if in.cmd == cmd {
			out = append(out, in.args)
		}
	}
	return out
}

// goVersion is the `go` line of go.mod.
func goVersion(t *testing.T) string {
	data, err := os.ReadFile(filepath.Join(repoRoot, "go.mod"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^go (\S+)$`).FindSubmatch(data)
	require.NotNil(t, m, "go.mod has no go line")
	return string(m[1])
}

func TestDockerfile(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, "Dockerfile"))
	require.NoError(t, err)
	stages, err := parseDockerfile(data)
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(stages), 2, "a multi-stage build: the toolchain stays out of the image")

	names := map[string]bool{}
	for _, s := range stages {
		if !names[s.from] && s.from != "scratch" {
			assert.Empty(t, imageProblem(s.from), "FROM %s", s.from)
		}
		names[s.name] = true
	}

	build := stages[0]
	repo, tag := splitTag(build.from)
	assert.Equal(t, "golang", repository(repo))
	assert.True(t, strings.HasPrefix(tag, goVersion(t)), "builder golang:%s, go.mod wants go %s: the build would fetch another toolchain", tag, goVersion(t))
	runs := strings.Join(build.all("RUN"), "\n")
	for _, want := range []string{"CGO_ENABLED=0", "-trimpath", "-X main.version=", "./cmd/agentruntime"} {
		assert.Contains(t, runs, want, "the build stage builds a static, reproducible, versioned binary")
	}

	final := stages[len(stages)-1]
	assert.True(t, strings.HasPrefix(final.from, "gcr.io/distroless/static") || final.from == "scratch", "final stage FROM %s: want distroless static or scratch", final.from)
	assert.Empty(t, rootUser(final))
	entrypoints := final.all("ENTRYPOINT")
	if assert.Len(t, entrypoints, 1) {
		var argv []string
		require.NoError(t, json.Unmarshal([]byte(entrypoints[0]), &argv), "ENTRYPOINT in exec form: signals reach the binary")
		assert.Equal(t, []string{"/agentruntime"}, argv)
	}
	assert.Contains(t, strings.Join(final.all("COPY"), "\n"), "/agentruntime", "the final stage copies the binary")
}

// dockerignored applies .dockerignore patterns as Docker does: the last
// pattern matching the path or one of its parent directories decides, and
// `!` re-includes.
func dockerignored(patterns []string, path string) bool {
	ignored := false
	for _, p := range patterns {
		include := strings.HasPrefix(p, "!")
		p = filepath.Clean(strings.TrimPrefix(p, "!"))
		re := regexp.MustCompile("^" + globToRegexp(p) + "$")
		dirs := strings.Split(path, "/")
		for i := range dirs {
			if re.MatchString(strings.Join(dirs[:i+1], "/")) {
				ignored = !include
				break
			}
		}
	}
	return ignored
}

func globToRegexp(glob string) string {
	var b strings.Builder
	for i := 0; i < len(glob); i++ {
		switch c := glob[i]; {
		case strings.HasPrefix(glob[i:], "**/"):
			b.WriteString("(.*/)?")
			i += 2
		case strings.HasPrefix(glob[i:], "**"):
			b.WriteString(".*")
			i++
		case c == '*':
			b.WriteString("[^/]*")
		case c == '?':
			b.WriteString("[^/]")
		default:
			b.WriteString(regexp.QuoteMeta(string(c)))
		}
	}
	return b.String()
}

// The build context holds every file the binary is built from, and nothing
// it is not: no VCS data, secrets, build output or tests.
func TestDockerignore(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot, ".dockerignore"))
	require.NoError(t, err)
	var patterns []string
	for line := range strings.Lines(string(data)) {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, line)
		}
	}

	cmd := exec.Command("go", "list", "-e", "-deps", "-f", "{{if .Module}}{{if .Module.Main}}{{.Dir}}{{end}}{{end}}", "./cmd/agentruntime")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	require.NoError(t, err, "go list")
	root, err := filepath.Abs(repoRoot)
	require.NoError(t, err)
	needed := []string{"go.mod", "go.sum"}
	for dir := range strings.Lines(string(out)) {
		if dir = strings.TrimSpace(dir); dir == "" {
			continue
		}
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, f := range files {
			if rel, _ := filepath.Rel(root, f); !strings.HasSuffix(rel, "_test.go") {
				needed = append(needed, filepath.ToSlash(rel))
			}
		}
	}
	require.Greater(t, len(needed), 10)
	for _, f := range needed {
		assert.False(t, dockerignored(patterns, f), "%s is needed by the build but .dockerignore leaves it out", f)
	}
	for _, f := range []string{
		".git/HEAD", "tilt/.build/agentruntime", "deploy/k8s/overlays/dev/auth.yaml",
		"cmd/agentruntime/e2e_test.go", "pkg/events/testdata/schema.json", ".bin/buf", "docs/architecture.md",
	} {
		assert.True(t, dockerignored(patterns, f), "%s reaches the build context", f)
	}
}

func TestDockerignoreMatching(t *testing.T) {
	t.Parallel()
	patterns := []string{"*", "!cmd/", "**/*_test.go", "**/testdata/"}
	assert.True(t, dockerignored(patterns, "README.md"))
	assert.False(t, dockerignored(patterns, "cmd/agentruntime/main.go"))
	assert.True(t, dockerignored(patterns, "cmd/agentruntime/main_test.go"))
	assert.True(t, dockerignored(patterns, "cmd/x/testdata/a/b"))
	assert.True(t, dockerignored(patterns, "pkg/a.go"))
}
