package main

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/openbdp/bdp/store/pgcluster"
)

// When the managed PostgreSQL dies (kill -9 of its postmaster), bdp serve
// restarts it: meanwhile /readyz and the API answer 503 with the error
// envelope, fast (no 500, no hang), then 200 again without anyone's help;
// SIGTERM afterwards still stops the restarted cluster.
func TestManagedPostgresIsRestartedAfterKill(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir)
	status, body := s.request("POST", "/operator/companies", operator,
		`{"name":"acme","admin":{"firstName":"Ada","lastName":"L","email":"ada@acme.test","password":"secret-pw-1"}}`)
	if status != 201 {
		t.Fatalf("create company: %d %s", status, body)
	}
	ada := basicAuth("ada@acme.test", "secret-pw-1")
	if status, body := s.request("GET", "/v2/company", ada, ""); status != 200 {
		t.Fatalf("GET /v2/company: %d %s", status, body)
	}

	pgDir := filepath.Join(dir, "postgres")
	for round := range 2 { // the supervisor keeps watching after a restart
		postmaster := readPostmasterPID(t, pgDir)
		if err := syscall.Kill(postmaster, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		client := &http.Client{Timeout: 5 * time.Second} // a hang fails the test
		seen := map[string]map[int]int{"/readyz": {}, "/v2/company": {}}
		var recovered time.Duration
		for recovered == 0 {
			if time.Since(killed) > 60*time.Second {
				t.Fatalf("round %d: not serving again within 60 s after kill -9 (answers seen: %v):\n%s", round, seen, s.log)
			}
			for _, path := range []string{"/readyz", "/v2/company"} {
				req, _ := http.NewRequest("GET", s.base+path, nil)
				ada(req)
				res, err := client.Do(req)
				if err != nil {
					t.Fatalf("round %d: GET %s: %v", round, path, err)
				}
				var env struct {
					Success *bool   `json:"success"`
					Error   *string `json:"error"`
				}
				_ = json.NewDecoder(res.Body).Decode(&env)
				res.Body.Close()
				seen[path][res.StatusCode]++
				switch {
				case res.StatusCode == 503 && path != "/readyz" && (env.Success == nil || *env.Success || env.Error == nil):
					t.Fatalf("round %d: 503 without the error envelope", round)
				case res.StatusCode != 200 && res.StatusCode != 503:
					t.Fatalf("round %d: GET %s answered %d while PostgreSQL restarted:\n%s", round, path, res.StatusCode, s.log)
				}
			}
			if seen["/readyz"][503] > 0 && seen["/v2/company"][503] > 0 &&
				seen["/readyz"][200] > 0 && seen["/v2/company"][200] > 0 && lastWere200(t, s, ada) {
				recovered = time.Since(killed)
			}
			time.Sleep(20 * time.Millisecond)
		}
		t.Logf("round %d: serving again %v after kill -9; answers %v", round, recovered.Round(time.Millisecond), seen)
		if readPostmasterPID(t, pgDir) == postmaster {
			t.Fatalf("round %d: the postmaster pid did not change", round)
		}
	}

	if err := s.stop(syscall.SIGTERM); err != nil {
		t.Fatalf("exit after SIGTERM: %v\n%s", err, s.log)
	}
	if postmasterRunning(dir) {
		t.Fatal("managed PostgreSQL still running after bdp serve exited")
	}
	if procs := pgcluster.ProcessesIn(pgDir); len(procs) > 0 {
		t.Fatalf("PostgreSQL processes left after SIGTERM: %v", procs)
	}
}

// lastWere200 checks that the 200s are not a fluke: both answer 200 now.
func lastWere200(t *testing.T, s *server, ada func(*http.Request)) bool {
	t.Helper()
	ready, _ := s.request("GET", "/readyz", nil, "")
	api, _ := s.request("GET", "/v2/company", ada, "")
	return ready == 200 && api == 200
}

func readPostmasterPID(t *testing.T, pgDir string) int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(pgDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(data), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}
