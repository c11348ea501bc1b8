package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/agentruntime/agentruntime/pkg/metrics"
)

var metricsLine = regexp.MustCompile(`metrics\s+(http://\S+/metrics)`)

// metricsURL is where a dev process said it serves /metrics.
func metricsURL(t *testing.T, dev *proc) string {
	t.Helper()
	m := metricsLine.FindStringSubmatch(dev.Output())
	if m == nil {
		t.Fatalf("the banner names no metrics address:\n%s", dev.Output())
	}
	return m[1]
}

// scrape reads a /metrics page into its metric families.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// value is the sample of family whose labels include want; -1 when there
// is none.
func value(families map[string]*dto.MetricFamily, family string, want map[string]string) float64 {
	f, ok := families[family]
	if !ok {
		return -1
	}
	total, found := 0.0, false
	for _, m := range f.GetMetric() {
		labels := map[string]string{}
		for _, l := range m.GetLabel() {
			labels[l.GetName()] = l.GetValue()
		}
		match := true
		for k, v := range want {
			if labels[k] != v {
				match = false
			}
		}
		if !match {
			continue
		}
		found = true
		switch {
		case m.GetCounter() != nil:
			total += m.GetCounter().GetValue()
		case m.GetGauge() != nil:
			total += m.GetGauge().GetValue()
		case m.GetHistogram() != nil:
			total += float64(m.GetHistogram().GetSampleCount())
		}
	}
	if !found {
		return -1
	}
	return total
}

// scrapeUntil scrapes until every expectation holds, or fails after a
// deadline with what it saw last.
func scrapeUntil(t *testing.T, url string, want []sample) map[string]*dto.MetricFamily {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		families := scrape(t, url)
		var missing []string
		for _, w := range want {
			if got := value(families, w.family, w.labels); !w.ok(got) {
				missing = append(missing, fmt.Sprintf("%s%v = %v, want %s", w.family, w.labels, got, w.desc()))
			}
		}
		if len(missing) == 0 {
			return families
		}
		if time.Now().After(deadline) {
			t.Fatalf("metrics never showed:\n  %s", strings.Join(missing, "\n  "))
		}
		time.Sleep(100 * time.Millisecond) // polling a condition with a deadline
	}
}

type sample struct {
	family  string
	labels  map[string]string
	exact   float64
	atLeast bool
}

func (s sample) ok(got float64) bool {
	if s.atLeast {
		return got >= s.exact
	}
	return got == s.exact
}

func (s sample) desc() string {
	if s.atLeast {
		return fmt.Sprintf(">= %v", s.exact)
	}
	return fmt.Sprint(s.exact)
}

// dashboardMetrics are the metric names the Grafana dashboard's queries use.
func dashboardMetrics(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("../../deploy/grafana/agentruntime.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &dash); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range dash.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, target := range p.Targets {
			exprs = append(exprs, target.Expr)
		}
	}
	for _, v := range dash.Templating.List {
		if q, ok := v.Query.(string); ok && v.Type == "query" {
			exprs = append(exprs, q)
		}
	}
	// A metric name is an identifier followed by '{', '[', ')' or ','
	// that is not a PromQL function, keyword or label name.
	ident := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promql := map[string]bool{"sum": true, "by": true, "rate": true, "max": true, "histogram_quantile": true, "le": true, "label_values": true, "without": true, "increase": true}
	var names []string
	for _, e := range exprs {
		// Drop label matchers and grouping clauses: what is inside {} and ().
		e = regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(e, "")
		e = regexp.MustCompile(`\b(by|without)\s*\([^)]*\)`).ReplaceAllString(e, "")
		e = regexp.MustCompile(`\[[^\]]*\]`).ReplaceAllString(e, "")
		e = regexp.MustCompile(`\b[0-9][0-9.]*(e[0-9]+)?\b`).ReplaceAllString(e, "")
		for _, id := range ident.FindAllString(e, -1) {
			if promql[id] || strings.HasPrefix(id, "service_name") {
				continue
			}
			if !slices.Contains(names, id) {
				names = append(names, id)
			}
		}
	}
	return names
}

// checkMetrics runs after the README tour: the dev process's /metrics
// shows the turn, the approval and the RPCs, and every metric the Grafana
// dashboard queries exists (declared in pkg/metrics' catalog, or seen on
// this scrape for the gRPC and Go runtime metrics).
func checkMetrics(t *testing.T, url string) {
	t.Helper()
	families := scrapeUntil(t, url, []sample{
		{family: "agentruntime_turns_ended_total", labels: map[string]string{"status": "completed"}, exact: 1},
		{family: "agentruntime_actions_required_total", labels: map[string]string{"action_type": "permission"}, exact: 1},
		{family: "agentruntime_actions_resolved_total", labels: map[string]string{"decision": "allow_once"}, exact: 1},
		{family: "agentruntime_events_appended_total", labels: map[string]string{"event_type": "turn.submitted"}, exact: 1},
		{family: "agentruntime_actions_pending", exact: 0},
		{family: "agentruntime_queue_depth", exact: 0},
		{family: "agentruntime_threads", labels: map[string]string{"status": "idle"}, exact: 1},
		{family: "rpc_server_call_duration_seconds", labels: map[string]string{
			"rpc_method": "agentruntime.control.v1.ControlService/SubmitTurn", "rpc_response_status_code": "OK"}, exact: 1, atLeast: true},
		{family: "go_memory_used_bytes", exact: 1, atLeast: true},
		{family: "agentruntime_rpc_server_active_streams", labels: map[string]string{"rpc_method": "agentruntime.control.v1.ControlService/SubscribeEvents"}, exact: 0},
		{family: "agentruntime_consumer_pending", labels: map[string]string{"consumer": "control"}, exact: 0},
		{family: "agentruntime_consumer_checkpoint", labels: map[string]string{"consumer": "control"}, exact: 1, atLeast: true},
		// The tour's watch started the hub.
		{family: "agentruntime_hub_position", exact: 1, atLeast: true},
		{family: "agentruntime_subscriptions", exact: 0, atLeast: true},
	})
	queried := dashboardMetrics(t)
	if !slices.Contains(queried, "agentruntime_turns_ended_total") || !slices.Contains(queried, "rpc_server_call_duration_seconds_bucket") {
		t.Fatalf("the dashboard parser found %v", queried)
	}
	declared := map[string]bool{}
	for _, i := range metrics.Catalog {
		declared[i.PrometheusName()] = true
	}
	for _, name := range queried {
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count"), "_sum")
		if !declared[name] && families[name] == nil && families[base] == nil {
			t.Errorf("the dashboard queries %s, which the runtime does not export", name)
		}
	}
}
