package main

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

// Closed weeks sealed by `bdp admin storage seal` read back through the
// API exactly as they did as rows (raw, newest, sampled with every
// aggregation), and again after `bdp admin storage unseal --all`; the
// figures say where the observations are.
func TestAdminStorageSealAndUnsealThroughTheAPI(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir, "BDP_SEAL_GRACE=1h")
	pid := companyProject(t, s, "seal", "seal@acme.test", "seal-password-12")
	admin := basicAuth("seal@acme.test", "seal-password-12")
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC) // three closed weeks
	for day := range 21 {
		var b strings.Builder
		b.WriteString(`{"temp":[`)
		for m := range 24 * 60 / 5 {
			at := start.AddDate(0, 0, day).Add(time.Duration(m)*5*time.Minute + time.Duration((day*31+m*17)%1000)*time.Millisecond)
			if m > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"time":%q,"value":%g}`, at.Format(time.RFC3339Nano), math.Round((20+4*math.Sin(float64(m)/40)+float64(day%5)/3)*100)/100)
		}
		b.WriteString(`]}`)
		if status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), admin, b.String()); status != 200 {
			t.Fatalf("upload: %d %s", status, body)
		}
	}
	reads := []string{
		"start=2024-01-01T00:00:00Z&end=2024-01-22T00:00:00Z",
		"max=1000",
		"start=2024-01-03T12:00:00Z&max=50",
		"end=2024-01-15T00:00:00Z&max=333",
	}
	for _, agg := range []string{"mean", "min", "max", "median", "count", "mode"} {
		reads = append(reads, "start=2024-01-01T00:00:00Z&end=2024-01-22T00:00:00Z&samplerate=1h&aggregation="+agg,
			"start=2024-01-02T07:00:00Z&end=2024-01-20T00:00:00Z&samplerate=1d&aggregation="+agg)
	}
	answers := func() []string {
		var out []string
		for _, q := range reads {
			status, body := s.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=temp&", pid)+q, admin, "")
			if status != 200 {
				t.Fatalf("%s: %d %s", q, status, body)
			}
			out = append(out, string(body))
		}
		return out
	}
	figures := func(args ...string) (head, sealed int64) {
		out, errOut, code := adminEnv(t, []string{"BDP_DATA_DIR=" + dir, "BDP_SEAL_GRACE=1h"}, "", append([]string{"storage"}, args...)...)
		if code != 0 {
			t.Fatalf("bdp admin storage %v: exit %d: %s", args, code, errOut)
		}
		// The figures are the last JSON object printed.
		var f struct {
			Head, Sealed struct{ Observations int64 }
			WeeksDue     *int `json:"weeks_due"`
		}
		if err := json.Unmarshal([]byte(out[strings.LastIndex(out, "{\n  \"chunks\""):]), &f); err != nil {
			t.Fatalf("bdp admin storage %v printed %s: %v", args, out, err)
		}
		if f.WeeksDue == nil {
			t.Fatalf("bdp admin storage %v printed no weeks_due:\n%s", args, out)
		}
		return f.Head.Observations, f.Sealed.Observations
	}
	rows := answers()
	if _, sealed := figures("--exact"); sealed != 0 {
		t.Fatalf("%d sealed before any seal", sealed)
	}
	if head, sealed := figures("seal"); sealed != 21*24*12 || head != 0 {
		t.Fatalf("after seal: head %d, sealed %d; want every observation sealed", head, sealed)
	}
	for i, got := range answers() {
		if got != rows[i] {
			t.Fatalf("%s over sealed weeks:\n%s\nas rows:\n%s", reads[i], got, rows[i])
		}
	}
	if head, sealed := figures("unseal", "--all", "--exact"); sealed != 0 || head != 21*24*12 {
		t.Fatalf("after unseal: head %d, sealed %d", head, sealed)
	}
	for i, got := range answers() {
		if got != rows[i] {
			t.Fatalf("%s unsealed:\n%s\nbefore:\n%s", reads[i], got, rows[i])
		}
	}
}
