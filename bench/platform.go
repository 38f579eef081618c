// Package bench runs bdp the way a user does and measures it: each
// scenario starts the real `bdp serve` against a throwaway PostgreSQL
// cluster, drives it from this (second) process and reports one JSON
// object. cmd/bdp-bench is its command line.
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/openbdp/bdp/store/pgcluster"
)

// Options say how to start the platform.
type Options struct {
	Binary string   // path of the bdp binary
	Env    []string // extra BDP_* settings, e.g. BDP_KAFKA_BROKERS=...
}

// Platform is a running `bdp serve` with a company, its admin and one
// project, ready to be loaded.
type Platform struct {
	Base      string // http://127.0.0.1:port
	DBURL     string // the database bdp serve uses, for direct checks
	Email     string
	Password  string
	ProjectID int64
	CompanyID int64

	cluster *pgcluster.Cluster
	stopPG  func()
	opts    Options
	cmd     *exec.Cmd
	dir     string
	log     *bytes.Buffer
}

const operatorToken = "bench-operator-token-0123456789"

// Start starts PostgreSQL and bdp serve, and creates the company and
// project.
func Start(ctx context.Context, opts Options) (*Platform, error) {
	p := &Platform{Email: "bench@example.com", Password: "bench-password-1", log: &bytes.Buffer{}}
	var err error
	if p.cluster, p.stopPG, err = pgcluster.StartForTests(ctx); err != nil {
		return nil, err
	}
	p.DBURL = p.cluster.URL()
	if p.dir, err = os.MkdirTemp("", "bdp-bench-"); err != nil {
		p.Close()
		return nil, err
	}
	p.opts = opts
	if err := p.serve(ctx); err != nil {
		p.Close()
		return nil, err
	}
	if err := p.createProject(ctx); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// serve starts bdp serve and waits until it answers /readyz.
func (p *Platform) serve(ctx context.Context) error {
	os.Remove(filepath.Join(p.dir, "addresses.json")) // a restart must not find the old address
	p.cmd = exec.Command(p.opts.Binary, "serve")
	p.cmd.Env = append(os.Environ(), append([]string{"BDP_HTTP_ADDR=127.0.0.1:0", "BDP_MQTT_ADDR=127.0.0.1:0", "BDP_S3_ADDR=127.0.0.1:0", "BDP_DATA_DIR=" + p.dir,
		"BDP_DATABASE_URL=" + p.DBURL, "BDP_OPERATOR_TOKEN=" + operatorToken, "BDP_LOG_LEVEL=warn",
		// The scenarios count what they stored as rows, in SQL, often in
		// closed weeks; sealing is bdp-bench storage's, which runs its own.
		"BDP_SEAL_GRACE=off"}, p.opts.Env...)...)
	p.cmd.Stdout, p.cmd.Stderr = p.log, p.log
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("start bdp serve: %w", err)
	}
	return p.waitReady(ctx)
}

// Restart stops bdp serve with SIGTERM and starts it again on the same
// database, returning once it answers /readyz.
func (p *Platform) Restart(ctx context.Context) error {
	p.stopServe()
	return p.serve(ctx)
}

// stopServe sends SIGINT and waits for the exit, at most 30 s.
func (p *Platform) stopServe() {
	if p.cmd == nil || p.cmd.Process == nil || p.cmd.ProcessState != nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
	}
}

func (p *Platform) waitReady(ctx context.Context) error {
	// Polled often: the resume scenario measures how soon this answers.
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if base, ok := Ready(p.dir); ok {
			p.Base = base
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("bdp serve not ready:\n%s", p.log)
}

func (p *Platform) createProject(ctx context.Context) error {
	var co struct {
		Resource struct {
			Company struct{ ID int64 } `json:"company"`
		} `json:"resource"`
	}
	err := p.Do(ctx, "POST", "/operator/companies", map[string]any{"name": "bench", "admin": map[string]any{
		"firstName": "B", "lastName": "Bench", "email": p.Email, "password": p.Password}}, &co, true)
	if err != nil {
		return err
	}
	var pr struct {
		Resource struct {
			Project struct{ ID int64 } `json:"project"`
		} `json:"resource"`
	}
	if err := p.Do(ctx, "POST", "/v2/company/project", map[string]any{"name": "bench"}, &pr, false); err != nil {
		return err
	}
	p.ProjectID, p.CompanyID = pr.Resource.Project.ID, co.Resource.Company.ID
	return nil
}

// Ready tells whether the bdp serve writing its addresses to dataDir
// answers /readyz, and returns its base URL: one probe, for callers that
// poll while the server starts.
func Ready(dataDir string) (string, bool) {
	b, err := os.ReadFile(filepath.Join(dataDir, "addresses.json"))
	if err != nil {
		return "", false
	}
	var addrs map[string]string
	if json.Unmarshal(b, &addrs) != nil || addrs["http"] == "" {
		return "", false
	}
	base := "http://" + addrs["http"]
	res, err := http.Get(base + "/readyz")
	if err != nil {
		return "", false
	}
	res.Body.Close()
	return base, res.StatusCode == 200
}

// Do sends a JSON request as the admin (or the operator) and decodes the
// answer into out; a non-2xx answer is an error.
func (p *Platform) Do(ctx context.Context, method, path string, body, out any, asOperator bool) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.Base+path, rd)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if asOperator {
		req.Header.Set("Authorization", "Bearer "+operatorToken)
	} else {
		req.SetBasicAuth(p.Email, p.Password)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode/100 != 2 {
		return fmt.Errorf("%s %s: HTTP %d: %s", method, path, res.StatusCode, b)
	}
	if out != nil {
		return json.Unmarshal(b, out)
	}
	return nil
}

// Close stops bdp serve and PostgreSQL and removes their files.
func (p *Platform) Close() {
	p.stopServe()
	if p.stopPG != nil {
		p.stopPG()
	}
	if p.dir != "" {
		os.RemoveAll(p.dir)
	}
}

// Report prints the result as one JSON object on the last line. When
// the result has "key_order" (a []string), those keys come first in that
// order (a figure table's order), the others after them sorted; key_order
// itself is not printed.
func Report(w io.Writer, result map[string]any) error {
	order, _ := result["key_order"].([]string)
	var b bytes.Buffer
	b.WriteByte('{')
	write := func(k string) error {
		v, ok := result[k]
		if !ok {
			return nil
		}
		if b.Len() > 1 {
			b.WriteByte(',')
		}
		kb, _ := json.Marshal(k)
		vb, err := json.Marshal(v)
		if err != nil {
			return err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
		return nil
	}
	for _, k := range order {
		if err := write(k); err != nil {
			return err
		}
	}
	rest := make([]string, 0, len(result))
	for k := range result {
		if k != "key_order" && !slices.Contains(order, k) {
			rest = append(rest, k)
		}
	}
	slices.Sort(rest)
	for _, k := range rest {
		if err := write(k); err != nil {
			return err
		}
	}
	b.WriteString("}\n")
	_, err := w.Write(b.Bytes())
	return err
}

// Median of repeated measurements.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// anotherProject creates another project of the company and answers its
// id; the admin has the company's rights on it.
func (p *Platform) anotherProject(ctx context.Context, name string) (int64, error) {
	var pr envelope[struct {
		Project struct{ ID int64 } `json:"project"`
	}]
	if err := p.Do(ctx, "POST", "/v2/company/project", map[string]any{"name": name}, &pr, false); err != nil {
		return 0, fmt.Errorf("create project %s: %w", name, err)
	}
	return pr.Resource.Project.ID, nil
}
