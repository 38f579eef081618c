package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"
)

// vdpProject creates a company, its admin and a project on s, and a
// running virtual datapoint avg3 there: the mean of the newest three
// values of temp, on every value.
func vdpProject(t *testing.T, s *server) (projectID int64, admin func(*http.Request)) {
	t.Helper()
	pid := companyProject(t, s, "vdp", "v@vdp.test", "vdp-pw-12")
	admin = basicAuth("v@vdp.test", "vdp-pw-12")
	vdp := fmt.Sprintf("/v2/project/%d/virtual_datapoint", pid)
	status, body := s.request("POST", vdp+"?dataPointID=avg3&type=formula", admin,
		`{"pins":{"P1":{"dataPointID":"temp","data_range":{"count":3},"aggregate":"mean"}},"parameters":{"formula":"P1;"}}`)
	if status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	if status, body = s.request("POST", vdp+"/run?dataPointID=avg3&run=true", admin, ""); status != 200 || !strings.Contains(string(body), `"Running"`) {
		t.Fatalf("run: %d %s", status, body)
	}
	return pid, admin
}

// waitRunning polls until the virtual datapoint reports Running again
// after a restart (it resumes in the background, Starting meanwhile).
func waitRunning(t *testing.T, s *server, projectID int64, admin func(*http.Request), id string) {
	t.Helper()
	var body []byte
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		_, body = s.request("GET", fmt.Sprintf("/v2/project/%d/virtual_datapoint?dataPointID=%s", projectID, id), admin, "")
		if strings.Contains(string(body), `"status":"Running"`) {
			return
		}
	}
	t.Fatalf("%s did not run again after the restart: %s", id, body)
}

// kill -9 of bdp serve right after a source upload is stored, three times
// in the middle of a feed: the outputs must end up those of a run without
// crashes, one for every source observation, none missing, none twice.
// Before the catch-up, each kill lost the outputs of what was stored but
// not yet calculated.
func TestCatchUpAfterKillDashNineMidFeed(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir)
	pid, admin := vdpProject(t, s)
	const uploads, perUpload = 16, 25
	at := time.Date(2026, 8, 3, 6, 0, 0, 0, time.UTC)
	values := make([]float64, uploads*perUpload)
	for i := range values {
		values[i] = float64((i*37)%101) / 4
	}
	killAfter := map[int]bool{3: true, 8: true, 12: true}
	for u := range uploads {
		var b strings.Builder
		b.WriteString(`{"temp":[`)
		for j := range perUpload {
			i := u*perUpload + j
			if j > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"time":%q,"value":%g}`, at.Add(time.Duration(i)*time.Minute).Format(time.RFC3339), values[i])
		}
		b.WriteString(`]}`)
		if status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), admin, b.String()); status != 200 {
			t.Fatalf("upload %d: %d %s", u, status, body)
		}
		if killAfter[u] {
			// The sources are stored; their outputs are on their way.
			if err := s.stop(syscall.SIGKILL); err == nil {
				t.Fatal("kill -9 must end bdp serve with an error")
			}
			s = startServe(t, dir)
			waitRunning(t, s, pid, admin, "avg3")
		}
	}

	var got struct {
		Data []struct {
			Time  string  `json:"time"`
			Value float64 `json:"value"`
		} `json:"data"`
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, body := s.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=avg3", pid), admin, "")
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("outputs: %v: %s", err, body)
		}
		if len(got.Data) >= len(values) || time.Now().After(deadline) {
			break
		}
	}
	if len(got.Data) != len(values) {
		t.Fatalf("%d outputs for %d source observations", len(got.Data), len(values))
	}
	for i, p := range got.Data {
		// What a run without crashes stores: the mean of the newest three.
		lo, sum := max(0, i-2), 0.0
		for _, v := range values[lo : i+1] {
			sum += v
		}
		want, wantAt := sum/float64(i+1-lo), at.Add(time.Duration(i)*time.Minute).Format(time.RFC3339)
		if p.Time != wantAt || p.Value != want {
			t.Fatalf("output %d: %s = %v, want %s = %v", i, p.Time, p.Value, wantAt, want)
		}
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}

// kill -9 of bdp serve before a virtual datapoint's first output is
// stored, with the output due while nothing runs: a mean of the newest
// three values on every_minute, run and fed within a minute, killed before
// that minute's boundary and started again after it. The output at the
// boundary must be there, as a run without the crash wrote it, and every
// boundary after it up to now. Before, a datapoint without a stored output
// resumed by refilling its windows and lost the boundary.
//
// The boundary is the wall clock's minute: bdp serve is a process of its
// own. So the test runs, feeds and kills first, then calls t.Parallel,
// which holds it until the package's other tests are done: the wait for
// the boundary passes while they run, not on its own.
func TestCatchUpAfterKillDashNineBeforeTheFirstOutput(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir)
	pid, admin := vdpProject(t, s)
	vdp := fmt.Sprintf("/v2/project/%d/virtual_datapoint", pid)
	status, body := s.request("POST", vdp+"?dataPointID=min3&type=formula", admin,
		`{"pins":{"P1":{"dataPointID":"temp","data_range":{"count":3},"aggregate":"mean","trigger":"every_minute"}},"parameters":{"formula":"P1;"}}`)
	if status != 200 {
		t.Fatalf("create: %d %s", status, body)
	}
	// Run, feed and kill well before the next boundary.
	if time.Until(time.Now().Truncate(time.Minute).Add(time.Minute)) < 3*time.Second {
		time.Sleep(time.Until(time.Now().Truncate(time.Minute).Add(time.Minute + time.Second)))
	}
	if status, body = s.request("POST", vdp+"/run?dataPointID=min3&run=true", admin, ""); status != 200 || !strings.Contains(string(body), `"Running"`) {
		t.Fatalf("run: %d %s", status, body)
	}
	ran := time.Now()
	boundary := ran.Truncate(time.Minute).Add(time.Minute)
	values := []float64{21.5, 19.25, 30, 24.75}
	var b strings.Builder
	b.WriteString(`{"temp":[`)
	for i, v := range values {
		if i > 0 {
			b.WriteByte(',')
		}
		at := ran.Add(time.Duration(i-len(values)) * time.Second).Truncate(time.Millisecond)
		fmt.Fprintf(&b, `{"time":%q,"value":%g}`, at.Format(time.RFC3339Nano), v)
	}
	b.WriteString(`]}`)
	if status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), admin, b.String()); status != 200 {
		t.Fatalf("upload: %d %s", status, body)
	}
	if err := s.stop(syscall.SIGKILL); err == nil {
		t.Fatal("kill -9 must end bdp serve with an error")
	}
	if !time.Now().Before(boundary) {
		t.Fatalf("the kill came after the boundary %s: the test is too slow to mean anything", boundary)
	}
	t.Parallel()
	time.Sleep(time.Until(boundary.Add(time.Second)))
	s = startServe(t, dir)
	waitRunning(t, s, pid, admin, "min3")

	// What a run without the crash stored: at each boundary since the
	// run, the mean of the newest three values.
	want := (values[1] + values[2] + values[3]) / 3
	var got struct {
		Data []struct {
			Time  string  `json:"time"`
			Value float64 `json:"value"`
		} `json:"data"`
	}
	var due int // boundaries up to now
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		due = int(time.Since(boundary)/time.Minute) + 1
		_, body = s.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=min3", pid), admin, "")
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("outputs: %v: %s", err, body)
		}
		if len(got.Data) >= due || time.Now().After(deadline) {
			break
		}
	}
	// The newest boundary may have passed a moment ago, its output on
	// its way.
	if len(got.Data) == 0 || len(got.Data) < due-1 || len(got.Data) > due {
		t.Fatalf("%d outputs, want one at each of the %d boundaries since %s: %s", len(got.Data), due, boundary, body)
	}
	for i, p := range got.Data {
		if wantAt := boundary.Add(time.Duration(i) * time.Minute).UTC().Format(time.RFC3339); p.Time != wantAt || p.Value != want {
			t.Fatalf("output %d: %s = %v, want %s = %v", i, p.Time, p.Value, wantAt, want)
		}
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
