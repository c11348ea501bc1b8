// Command agentruntime runs the Agent Runtime: `agentruntime dev` runs all
// five services in one process on one machine; `agentruntime serve <name>`
// runs one service against a NATS JetStream cluster and Redis (the
// Kubernetes shape).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/agentruntime/agentruntime/pkg/worker/confine"
)

// version is releaseVersion unless the build sets another with -ldflags
// "-X main.version=...".
var version = releaseVersion

const usage = `agentruntime: the Agent Runtime execution service

Usage:
  agentruntime dev [flags]            all five services, embedded JetStream, one process
  agentruntime serve <service> [flags] one service against NATS JetStream and Redis
                                      (service: control, tasks, routing, permission, evidence)
  agentruntime worker [flags]         run agent turns for a runtime (scripted or OpenAI-compatible provider)
  agentruntime submit [flags] "..."   submit an objective as a turn
  agentruntime watch [flags]          a session's live timeline (--json: one event per line)
  agentruntime approve|deny [id]      answer the pending approval (or the named action)
  agentruntime respond [flags] TEXT   answer the agent's pending question (request_user_input)
  agentruntime export <what> [flags]  evidence|replay|review pack, events or snapshot as spec JSON
  agentruntime tasks ls|show|retry|cancel  the tenant's tasks
  agentruntime webhooks create|ls|delete   the tenant's webhook subscriptions
  agentruntime version [--json]      version, commit, API and event schema, read models' fold versions

Run "agentruntime <command> -h" for the flags of a command. Every flag can
also be set by an AR_* environment variable (--data-dir <- AR_DATA_DIR).
`

func main() {
	// The worker confines a shell command by starting this executable as
	// its sandbox helper; that start never gets past this line.
	confine.Main()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run is main without the process: it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch args[0] {
	case "dev":
		err = runDev(ctx, args[1:], stdout, stderr)
	case "serve":
		err = runServe(ctx, args[1:], stdout, stderr)
	case "worker":
		err = runWorker(ctx, args[1:], stdout, stderr)
	case "submit":
		err = runSubmit(ctx, args[1:], stdout, stderr)
	case "watch":
		err = runWatch(ctx, args[1:], stdout, stderr)
	case "approve", "deny":
		err = runRespond(ctx, args[0], args[1:], stdout, stderr)
	case "respond":
		err = runAnswer(ctx, args[1:], stdout, stderr)
	case "export":
		err = runExport(ctx, args[1:], stdout, stderr)
	case "tasks":
		err = runTasks(ctx, args[1:], stdout, stderr)
	case "webhooks":
		err = runWebhooks(ctx, args[1:], stdout, stderr)
	case "version":
		err = runVersion(args[1:], stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "agentruntime: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
	if err != nil {
		if err == errUsage {
			return 2
		}
		fmt.Fprintln(stderr, "agentruntime:", err)
		return 1
	}
	return 0
}
