package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/agentruntime/agentruntime/pkg/enums"
	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	evidencev1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/evidence/v1"
)

const exportUsage = `usage: agentruntime export <what> [flags]

  evidence   an evidence pack of a session (or --thread/--turn/--task)
  replay     a replay case of the same scopes
  review     a review pack of the same scopes
  events     the session's events as spec JSON, one per line (--format core|lime)
  snapshot   the session snapshot as spec JSON (--format core|lime)

The pack or JSON goes to --output (default: stdout); what was exported is
said on stderr.
`

// notes collects a repeatable flag.
type notes []string

func (n *notes) String() string     { return strings.Join(*n, "; ") }
func (n *notes) Set(v string) error { *n = append(*n, v); return nil }

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprint(stderr, exportUsage)
		return errUsage
	}
	what := args[0]
	switch what {
	case "evidence", "replay", "review", "events", "snapshot":
	default:
		fmt.Fprintf(stderr, "agentruntime export: unknown export %q\n\n%s", what, exportUsage)
		return errUsage
	}
	fs := flag.NewFlagSet("agentruntime export "+what, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		cf                         clientFlags
		session, thread, turn, tsk string
		output, format, grader     string
		atSeq                      uint64
		reviewNotes                notes
	)
	cf.register(fs)
	fs.StringVar(&session, "session", "default", "the session")
	fs.StringVar(&output, "output", "", "write the pack or JSON to this file (default: stdout)")
	fs.StringVar(&output, "o", "", "short for --output")
	switch what {
	case "events", "snapshot":
		fs.StringVar(&format, "format", "core", "core (the spec's schema) or lime (the Lime profile)")
	default:
		fs.StringVar(&thread, "thread", "", "export one thread of the session")
		fs.StringVar(&turn, "turn", "", "export one turn of the session")
		fs.StringVar(&tsk, "task", "", "export one task of the session")
		fs.Uint64Var(&atSeq, "at-sequence", 0, "the facts up to this log sequence (0: all the evidence service has seen)")
		if what != "replay" {
			fs.Var(&reviewNotes, "note", "a review note recorded in the pack (repeatable)")
		}
		if what == "replay" {
			fs.StringVar(&grader, "grader-instructions", "", "grader or review instructions for the replay case")
		}
	}
	rest, err := parseArgs(fs, args[1:])
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		fmt.Fprintf(stderr, "agentruntime export %s: unexpected argument %q\n", what, rest[0])
		return errUsage
	}
	conn, err := cf.dial()
	if err != nil {
		return err
	}
	defer conn.Close()
	ev := evidencev1.NewEvidenceServiceClient(conn)

	var body []byte
	switch what {
	case "events", "snapshot":
		f, err := exportFormat(format)
		if err != nil {
			return err
		}
		if what == "events" {
			body, err = exportEvents(ctx, ev, session, f, stderr)
		} else {
			var resp *evidencev1.ExportSnapshotResponse
			resp, err = ev.ExportSnapshot(ctx, &evidencev1.ExportSnapshotRequest{SessionId: session, Format: f})
			if err == nil {
				body = append([]byte(resp.GetSnapshotJson()), '\n')
				fmt.Fprintf(stderr, "snapshot of session %s (%s) at sequence %d\n", session, format, resp.GetCoversSequence())
			}
		}
		if err != nil {
			return rpcError("export "+what, err)
		}
	default:
		scope, err := exportScope(session, thread, turn, tsk)
		if err != nil {
			return err
		}
		var res *evidencev1.ExportResult
		switch what {
		case "evidence":
			var r *evidencev1.ExportEvidenceResponse
			r, err = ev.ExportEvidence(ctx, &evidencev1.ExportEvidenceRequest{Scope: scope, AtSequence: atSeq, ReviewNotes: reviewNotes})
			res = r.GetResult()
		case "replay":
			var r *evidencev1.ExportReplayResponse
			r, err = ev.ExportReplay(ctx, &evidencev1.ExportReplayRequest{Scope: scope, AtSequence: atSeq, GraderInstructions: grader})
			res = r.GetResult()
		case "review":
			var r *evidencev1.ExportReviewResponse
			r, err = ev.ExportReview(ctx, &evidencev1.ExportReviewRequest{Scope: scope, AtSequence: atSeq, ReviewNotes: reviewNotes})
			res = r.GetResult()
		}
		if err != nil {
			return rpcError("export "+what, err)
		}
		if body, err = readOutput(ctx, controlv1.NewControlServiceClient(conn), res.GetPack().GetUri(), res.GetPack().GetSha256()); err != nil {
			return err
		}
		describeExport(stderr, what, res)
	}
	if output == "" || output == "-" {
		_, err = stdout.Write(body)
		return err
	}
	if err := os.WriteFile(output, body, 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "wrote %s (%d bytes)\n", output, len(body))
	return nil
}

func exportFormat(s string) (evidencev1.Format, error) {
	switch s {
	case "core":
		return evidencev1.Format_FORMAT_CORE, nil
	case "lime", "lime-profile":
		return evidencev1.Format_FORMAT_LIME_PROFILE, nil
	}
	return 0, fmt.Errorf("--format %q: want core or lime", s)
}

func exportScope(session, thread, turn, task string) (*evidencev1.Scope, error) {
	scope := &evidencev1.Scope{SessionId: session, Kind: evidencev1.ScopeKind_SCOPE_KIND_SESSION}
	n := 0
	for _, s := range []struct {
		id   string
		kind evidencev1.ScopeKind
	}{{thread, evidencev1.ScopeKind_SCOPE_KIND_THREAD}, {turn, evidencev1.ScopeKind_SCOPE_KIND_TURN}, {task, evidencev1.ScopeKind_SCOPE_KIND_TASK}} {
		if s.id != "" {
			scope.Kind, scope.Id = s.kind, s.id
			n++
		}
	}
	if n > 1 {
		return nil, fmt.Errorf("name at most one of --thread, --turn, --task")
	}
	return scope, nil
}

// exportEvents pages through the session's events; skipped events (a
// format that cannot represent them) are named on stderr, not dropped
// silently.
func exportEvents(ctx context.Context, ev evidencev1.EvidenceServiceClient, session string, f evidencev1.Format, stderr io.Writer) ([]byte, error) {
	var buf bytes.Buffer
	rendered, skipped := 0, 0
	for from := uint64(0); ; {
		resp, err := ev.ExportEvents(ctx, &evidencev1.ExportEventsRequest{SessionId: session, Format: f, FromSequence: from})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetEventsJson() {
			buf.WriteString(e)
			buf.WriteByte('\n')
			rendered++
		}
		for _, s := range resp.GetSkipped() {
			fmt.Fprintf(stderr, "skipped %d %s: %s (%s)\n", s.GetSequence(), s.GetType(), s.GetReason(), s.GetDetail())
			skipped++
		}
		if resp.GetNextSequence() == 0 {
			break
		}
		from = resp.GetNextSequence()
	}
	fmt.Fprintf(stderr, "%d events of session %s exported, %d skipped\n", rendered, session, skipped)
	return buf.Bytes(), nil
}

// readOutput fetches a stored object page by page and checks it against
// the hash its ref announced.
func readOutput(ctx context.Context, control controlv1.ControlServiceClient, uri, want string) ([]byte, error) {
	var out []byte
	for off := int64(0); ; {
		r, err := control.ReadOutput(ctx, &controlv1.ReadOutputRequest{Uri: uri, Offset: off})
		if err != nil {
			return nil, rpcError("read "+uri, err)
		}
		out = append(out, r.GetData()...)
		if r.GetNextOffset() >= r.GetSizeBytes() {
			break
		}
		off = r.GetNextOffset()
	}
	sum := sha256.Sum256(out)
	if got := hex.EncodeToString(sum[:]); want != "" && got != want {
		return nil, fmt.Errorf("read %s: sha256 %s, the ref says %s", uri, got, want)
	}
	return out, nil
}

func describeExport(w io.Writer, what string, res *evidencev1.ExportResult) {
	fmt.Fprintf(w, "%s %s: sha256 %s, covers sequence %d\n", what, res.GetEvidenceId(), res.GetContentSha256(), res.GetCoversSequence())
	var applies, not []string
	for _, s := range res.GetSignals() {
		if s.GetStatus() == evidencev1.SignalStatus_SIGNAL_STATUS_NOT_APPLICABLE {
			not = append(not, s.GetName())
			continue
		}
		applies = append(applies, s.GetName()+"="+enums.Word(s.GetStatus()))
	}
	fmt.Fprintf(w, "  signals    %s\n", strings.Join(applies, " "))
	if len(not) > 0 {
		fmt.Fprintf(w, "  n/a        %s\n", strings.Join(not, " "))
	}
	if gaps := res.GetKnownGaps(); len(gaps) > 0 {
		fmt.Fprintf(w, "  known gaps %s\n", strings.Join(gaps, "; "))
	}
}
