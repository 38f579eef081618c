package main

import (
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A restart of bdp resumes every Running virtual datapoint with its
// windows rebuilt from the store: the first output after the restart
// averages observations from before it.
func TestRestartResumesVirtualDatapointsWithWindows(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir)
	pid, admin := vdpProject(t, s)
	at := time.Date(2026, 8, 3, 6, 0, 0, 0, time.UTC)
	upload := func(s *server, minute int, v float64) {
		t.Helper()
		b := fmt.Sprintf(`{"temp":[{"time":%q,"value":%g}]}`, at.Add(time.Duration(minute)*time.Minute).Format(time.RFC3339), v)
		if status, body := s.request("POST", fmt.Sprintf("/v2/project/%d/timeseries", pid), admin, b); status != 200 {
			t.Fatalf("upload: %d %s", status, body)
		}
	}
	outputs := func(s *server, n int) string {
		t.Helper()
		var body []byte
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			_, body = s.request("GET", fmt.Sprintf("/v2/datapoint/timeseries?project_id=%d&dataPointID=avg3", pid), admin, "")
			if strings.Count(string(body), `"value"`) >= n {
				break
			}
		}
		return string(body)
	}
	upload(s, 0, 10)
	upload(s, 1, 20)
	outputs(s, 2)
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}

	s = startServe(t, dir)
	waitRunning(t, s, pid, admin, "avg3")
	upload(s, 2, 60)
	got := outputs(s, 3)
	// mean(10, 20, 60) = 30: the window kept the two values from before.
	if !strings.Contains(got, `"time":"2026-08-03T06:02:00Z","value":30`) {
		t.Fatalf("output after the restart: %s", got)
	}
	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
}
