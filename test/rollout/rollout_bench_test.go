// Package rollout_test measures a rolling restart of workers as real
// processes: `agentruntime dev --no-worker` and three `agentruntime worker`
// processes of the real binary (built without -race: this is a benchmark),
// replaced one by one while turns that append to a file run. It holds
// benchmarks only: `go test ./...` builds it and runs nothing.
package rollout_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	controlv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/control/v1"
	eventsv1 "github.com/agentruntime/agentruntime/pkg/gen/agentruntime/events/v1"
	"github.com/agentruntime/agentruntime/pkg/testkit/binproc"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// bin builds the binary once per test process, without the race detector.
func bin(b *testing.B) string {
	buildOnce.Do(func() {
		binary, _, buildErr = binproc.Build("", false)
	})
	if buildErr != nil {
		b.Fatal(buildErr)
	}
	return binary
}

const (
	workers    = 3
	slots      = 4
	inFlight   = 16 // turns the load keeps submitted and not yet ended
	maxJobs    = 4000
	steadyTime = 15 * time.Second
	maxHeld    = 2 * workers * slots // approvals held until the rollout
)

// script: job N runs `echo job-N >> ledger.txt` (a shell call, which asks
// for approval), then answers. The scripted provider matches the input,
// so each job's line is its own.
func script(b *testing.B) string {
	var sb strings.Builder
	sb.WriteString("model: scripted\nturns:\n")
	for i := range maxJobs {
		fmt.Fprintf(&sb, "  - match: \"[%s]\"\n    steps:\n      - tool_calls: [{name: shell, arguments: {command: \"echo %s >> ledger.txt\"}}]\n      - text: appended\n", job(i), job(i))
	}
	p := filepath.Join(b.TempDir(), "rollout.yaml")
	if err := os.WriteFile(p, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return p
}

func job(i int) string { return fmt.Sprintf("job-%05d", i) }

// workerProc is one `agentruntime worker` process.
type workerProc struct {
	cmd  *exec.Cmd
	done chan error
	out  *binproc.Buffer
}

// startWorker runs a worker process and waits for its banner (printed
// once it is connected; it claims from then on).
func startWorker(b *testing.B, addr, ws, scriptPath, id string) *workerProc {
	cmd := exec.Command(bin(b), "worker", "--addr", addr, "--workspace", ws, "--worker-id", id, "--script", scriptPath,
		"--max-turns", fmt.Sprint(slots), "--shutdown-timeout", "60s", "--health-listen", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	w := &workerProc{cmd: cmd, done: make(chan error, 1), out: &binproc.Buffer{}}
	cmd.Stderr = bufferWriter{w.out}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-w.done
		if b.Failed() {
			b.Logf("worker %s output:\n%s", id, w.out.String())
		}
	})
	ready := make(chan struct{})
	go func() {
		health := regexp.MustCompile(`^\s*health\s+\S+ \(grpc\.health`)
		sc := bufio.NewScanner(stdout)
		said := false
		for sc.Scan() {
			w.out.WriteString(sc.Text() + "\n")
			if !said && health.MatchString(sc.Text()) {
				said = true
				close(ready)
			}
		}
		w.done <- cmd.Wait()
		if !said {
			close(ready)
		}
	}()
	select {
	case <-ready:
	case <-time.After(60 * time.Second):
		b.Fatalf("worker %s printed no banner:\n%s", id, w.out.String())
	}
	return w
}

type bufferWriter struct{ b *binproc.Buffer }

func (w bufferWriter) Write(p []byte) (int, error) { w.b.WriteString(string(p)); return len(p), nil }

// BenchmarkWorkerRollout: three worker processes (4 slots each) serve a
// closed loop of 16 turns in flight, one session each, each turn one shell
// call (it asks for approval) that appends its job's line to ledger.txt,
// then an answer. An approver answers every action.required at once,
// except the approvals of every fourth job, up to 24, which are held (a
// new turn takes the held one's place in the loop) until the rollout
// starts and answered while the first worker drains. After 15 s of steady
// state, each worker in turn gets SIGTERM (it stops claiming, hands its
// turns back at their next step boundary, exits), is waited for, and a new
// worker process takes its place. 5 s later the load stops and every
// submitted turn must complete. Fatal: a turn that did not complete (lost
// or failed), a tool call with two tool.result, a job whose line is in the
// ledger other than once. Reported: the loop's turns per second during the
// rollout (first SIGTERM to the third new worker's banner) and during the
// rollout and the 5 s after it, each against steady state (the held turns
// are extra work in the rollout, not counted).
func BenchmarkWorkerRollout(b *testing.B) {
	ws := b.TempDir()
	scriptPath := script(b)
	dev := binproc.Start(b, bin(b), nil, "dev", "--listen", "127.0.0.1:0", "--data-dir", b.TempDir(), "--no-worker", "--max-parked-turns-per-tenant", "0")
	conn, err := grpc.NewClient(dev.Addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { conn.Close() })
	control := controlv1.NewControlServiceClient(conn)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	// Every fact the load needs, read as it comes.
	sub, err := control.SubscribeEvents(ctx, &controlv1.SubscribeEventsRequest{
		TypePrefixes: []string{"action.required", "tool.result", "turn.completed", "turn.failed", "run.status"},
		Start:        controlv1.StartFrom_START_FROM_NOW})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := sub.Header(); err != nil {
		b.Fatal(err)
	}

	var (
		mu        sync.Mutex
		ended     = map[string]string{} // turn: turn.completed or turn.failed
		endedAt   = map[string]time.Time{}
		results   = map[string]int{} // tool call id: tool.result facts
		drained   int                // runs handed back by a draining worker
		lostRuns  int                // run.status lost
		held      []string           // actions held until the rollout
		heldTurns = map[string]bool{}
		holding   = true
		submitted []string
		endCh     = make(chan string, 1024)
		subErr    = make(chan error, 1)
	)
	respond := func(action string) {
		go func() {
			if _, err := control.RespondAction(ctx, &controlv1.RespondActionRequest{ActionId: action, Decision: "allow_once"}); err != nil && ctx.Err() == nil {
				b.Errorf("RespondAction %s: %v", action, err)
			}
		}()
	}
	jobOf := map[string]int{} // turn: job
	go func() {
		for {
			m, err := sub.Recv()
			if err != nil {
				subErr <- err
				return
			}
			ev := m.GetEvent()
			mu.Lock()
			switch ev.GetType() {
			case "action.required":
				if holding && jobOf[ev.GetTurnId()]%4 == 0 && len(held) < maxHeld && !heldTurns[ev.GetTurnId()] {
					// Out of the loop: a new turn takes its place.
					held, heldTurns[ev.GetTurnId()] = append(held, ev.GetActionId()), true
					mu.Unlock()
					endCh <- ""
					continue
				} else {
					respond(ev.GetActionId())
				}
			case "tool.result":
				results[ev.GetToolCallId()]++
			case "turn.completed", "turn.failed":
				if _, ok := ended[ev.GetTurnId()]; !ok {
					ended[ev.GetTurnId()], endedAt[ev.GetTurnId()] = ev.GetType(), time.Now()
					loop := !heldTurns[ev.GetTurnId()]
					mu.Unlock()
					if loop {
						endCh <- ev.GetTurnId()
					}
					continue
				}
			case "run.status":
				switch ev.GetRunStatus().GetPhase() {
				case "parked":
					if ev.GetRunStatus().GetMetadata()["reason"] == "drain" {
						drained++
					}
				case "lost":
					lostRuns++
				}
			}
			mu.Unlock()
		}
	}()

	wp := make([]*workerProc, workers)
	for i := range wp {
		wp[i] = startWorker(b, dev.Addr, ws, scriptPath, fmt.Sprintf("w%d", i))
	}

	// The load: a closed loop of inFlight turns, one session each.
	next := 0
	submit := func() error {
		if next >= maxJobs {
			return fmt.Errorf("the load ran past the script's %d jobs", maxJobs)
		}
		j := job(next)
		mu.Lock()
		jobOf[j] = next
		submitted = append(submitted, j)
		mu.Unlock()
		next++
		if _, err := control.SubmitTurn(ctx, &controlv1.SubmitTurnRequest{SessionId: j, ThreadId: j, TurnId: j,
			Input: []*eventsv1.InputPart{{Content: &eventsv1.InputPart_Text{Text: "append [" + j + "]"}}}}); err != nil {
			return err
		}
		return nil
	}
	var loading = true
	var loadMu sync.Mutex
	loadDone := make(chan struct{})
	for range inFlight {
		if err := submit(); err != nil {
			b.Fatal(err)
		}
	}
	go func() {
		defer close(loadDone)
		for {
			select {
			case <-endCh:
			case err := <-subErr:
				b.Errorf("the subscription ended: %v", err)
				return
			case <-ctx.Done():
				return
			}
			loadMu.Lock()
			more := loading
			loadMu.Unlock()
			if !more {
				continue
			}
			if err := submit(); err != nil {
				b.Errorf("SubmitTurn: %v", err)
				return
			}
		}
	}()
	completedIn := func(from, to time.Time) int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for t, at := range endedAt {
			if ended[t] == "turn.completed" && !heldTurns[t] && !at.Before(from) && at.Before(to) {
				n++
			}
		}
		return n
	}

	// Steady state (the first seconds warm up and are not counted).
	time.Sleep(3 * time.Second) // a measurement window, not a wait for a condition
	steadyFrom := time.Now()
	time.Sleep(steadyTime) // the window of steady state
	steadyTo := time.Now()

	// The rollout.
	rollFrom := time.Now()
	mu.Lock()
	holding = false
	toAnswer := held
	held = nil
	mu.Unlock()
	for i := range wp {
		if err := wp[i].cmd.Process.Signal(syscall.SIGTERM); err != nil {
			b.Fatal(err)
		}
		if i == 0 { // the held approvals are answered while the first worker drains
			for _, a := range toAnswer {
				respond(a)
			}
		}
		select {
		case err := <-wp[i].done:
			wp[i].done <- err // for the cleanup
			if err != nil {
				b.Fatalf("worker w%d did not exit cleanly after its drain: %v\n%s", i, err, wp[i].out.String())
			}
		case <-time.After(90 * time.Second):
			b.Fatalf("worker w%d did not exit within 90 s of SIGTERM", i)
		}
		wp[i] = startWorker(b, dev.Addr, ws, scriptPath, fmt.Sprintf("w%d-next", i))
	}
	rollTo := time.Now()
	// The same length of steady state after, so the turns handed back
	// during the rollout are counted where they complete.
	time.Sleep(5 * time.Second) // a measurement window
	afterTo := time.Now()

	loadMu.Lock()
	loading = false
	loadMu.Unlock()
	// Every submitted turn completes.
	deadline := time.After(2 * time.Minute)
	for {
		mu.Lock()
		left := len(submitted) - len(ended)
		mu.Unlock()
		if left == 0 {
			break
		}
		select {
		case <-deadline:
			mu.Lock()
			var open []string
			for _, t := range submitted {
				if _, ok := ended[t]; !ok {
					open = append(open, t)
				}
			}
			mu.Unlock()
			b.Fatalf("lost turns: %d of %d never ended: %v", len(open), len(submitted), open[:min(len(open), 20)])
		case <-time.After(100 * time.Millisecond):
		}
	}
	cancel()
	<-loadDone

	steady := float64(completedIn(steadyFrom, steadyTo)) / steadyTo.Sub(steadyFrom).Seconds()
	rolling := float64(completedIn(rollFrom, rollTo)) / rollTo.Sub(rollFrom).Seconds()
	after := float64(completedIn(rollTo, afterTo)) / afterTo.Sub(rollTo).Seconds()
	through := float64(completedIn(rollFrom, afterTo)) / afterTo.Sub(rollFrom).Seconds()
	mu.Lock()
	defer mu.Unlock()
	failed := 0
	for _, t := range submitted {
		if ended[t] != "turn.completed" {
			failed++
		}
	}
	dup := 0
	for id, n := range results {
		if n > 1 {
			dup++
			b.Errorf("tool call %s: %d tool.result", id, n)
		}
	}
	ledger, err := os.ReadFile(filepath.Join(ws, "ledger.txt"))
	if err != nil {
		b.Fatal(err)
	}
	lines := map[string]int{}
	for _, l := range strings.Split(strings.TrimSpace(string(ledger)), "\n") {
		lines[l]++
	}
	twice, missing := 0, 0
	for _, t := range submitted {
		switch n := lines[t]; {
		case n == 0:
			missing++
		case n > 1:
			twice++
		}
	}
	if failed != 0 || dup != 0 || twice != 0 || missing != 0 || len(lines) != len(submitted) {
		b.Fatalf("%d turns: %d did not complete, %d tool calls with two tool.result, %d ledger lines twice, %d missing, %d distinct lines",
			len(submitted), failed, dup, twice, missing, len(lines))
	}
	b.Logf("%d turns, %d held approvals answered during the rollout, %d runs handed back by draining workers, %d runs lost (retried), rollout took %v",
		len(submitted), len(toAnswer), drained, lostRuns, rollTo.Sub(rollFrom).Round(time.Millisecond))
	b.ReportMetric(steady, "steady-turns/s")
	b.ReportMetric(rolling, "rollout-turns/s")
	b.ReportMetric(after, "after-turns/s")
	b.ReportMetric(rolling/steady, "ratio-rollout/steady")
	b.ReportMetric(through/steady, "ratio-rollout+5s/steady")
	b.ReportMetric(rollTo.Sub(rollFrom).Seconds(), "rollout-s")
	b.ReportMetric(float64(len(submitted)-failed), "completed")
	b.ReportMetric(float64(failed), "lost")
	b.ReportMetric(float64(dup+twice), "repeated")
	b.ReportMetric(float64(lostRuns), "runs-lost")
	b.ReportMetric(float64(drained), "runs-handed-back")
	b.ReportMetric(0, "ns/op")
}
