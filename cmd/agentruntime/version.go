package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"text/tabwriter"

	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	"github.com/agentruntime/agentruntime/pkg/events"
	"github.com/agentruntime/agentruntime/services/all"
)

// releaseVersion is the version of this source tree: CHANGELOG.md's next
// release. A build may stamp another (-ldflags "-X main.version=...", as
// the Dockerfile does).
const releaseVersion = "0.3.0-dev"

// buildInfo is what `agentruntime version` prints: what an operator
// compares before and after an upgrade (docs/upgrading.md).
type buildInfo struct {
	Version string `json:"version"`
	// Commit is the VCS revision the binary was built from, when the
	// build recorded it; Modified: from a tree with uncommitted changes.
	Commit   string `json:"commit,omitempty"`
	Modified bool   `json:"modified,omitempty"`
	// API are the versioned proto packages the binary serves and
	// understands ("agentruntime.control.v1").
	API []string `json:"api"`
	// EventSchema is what every event envelope it writes says
	// (events.SchemaVersion).
	EventSchema string `json:"event_schema"`
	// ReadModels are each service's projections with their fold versions
	// and the generation of the service's store they make.
	ReadModels []readModelInfo `json:"read_models"`
}

type readModelInfo struct {
	Service     string `json:"service"`
	Projection  string `json:"projection"`
	FoldVersion int    `json:"fold_version"`
	Generation  string `json:"generation"`
}

func currentBuild() buildInfo {
	b := buildInfo{Version: version, EventSchema: events.SchemaVersion}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	protoregistry.GlobalFiles.RangeFiles(func(fd protoreflect.FileDescriptor) bool {
		if pkg := string(fd.Package()); strings.HasPrefix(pkg, "agentruntime.") && !slices.Contains(b.API, pkg) {
			b.API = append(b.API, pkg)
		}
		return true
	})
	slices.Sort(b.API)
	for _, service := range all.Names {
		gen := all.Generation(service)
		for _, f := range all.Folds[service] {
			b.ReadModels = append(b.ReadModels, readModelInfo{Service: service, Projection: f.Name, FoldVersion: f.Version, Generation: gen.ID})
		}
	}
	return b
}

func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("agentruntime version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON (one object) for machines")
	rest, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "agentruntime version: unexpected argument %q\nusage: agentruntime version [--json]\n", rest[0])
		return errUsage
	}
	b := currentBuild()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(b)
	}
	commit := b.Commit
	switch {
	case commit == "":
		commit = "unknown (built without VCS information)"
	case b.Modified:
		commit += " (modified)"
	}
	fmt.Fprintf(stdout, "agentruntime %s\n  commit        %s\n  api           %s\n  event schema  %s\n  read models   (fold versions; docs/upgrading.md)\n",
		b.Version, commit, strings.Join(b.API, ", "), b.EventSchema)
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	for _, rm := range b.ReadModels {
		fmt.Fprintf(tw, "    %s\t%s\t%d\t%s\n", rm.Service, rm.Projection, rm.FoldVersion, rm.Generation)
	}
	return tw.Flush()
}
