package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
)

// csvDatapoints is how many datapoints the generated file spreads over.
const csvDatapoints = 10_000

// CSV is `bdp-bench csv`: it uploads a generated file of lines
// observations (csvDatapoints datapoints, one value a minute each) to POST
// /v2/project/{id}/importTimeseries with on_error=abort, streamed from a
// pipe so that neither side holds the file, and measures the wall time
// until the answer; abort mode checks every line before it stores any,
// so the answer comes after the last observation is committed. The
// stored count is then checked in SQL.
func CSV(ctx context.Context, opts Options, lines int) (map[string]any, error) {
	p, err := Start(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	var size countingWriter
	go func() {
		fw, err := mw.CreateFormFile("import_file", "bench.csv")
		if err == nil {
			err = generateCSV(io.MultiWriter(fw, &size), lines)
		}
		if err == nil {
			err = mw.Close()
		}
		pw.CloseWithError(err)
	}()
	url := fmt.Sprintf("%s/v2/project/%d/importTimeseries?format=csv&on_error=abort", p.Base, p.ProjectID)
	req, err := http.NewRequestWithContext(ctx, "POST", url, pr)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	req.SetBasicAuth(p.Email, p.Password)
	start := time.Now()
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("upload: %w", err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	elapsed := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("upload answer: %w", err)
	}
	var answer struct {
		Resource struct {
			Success int64 `json:"total_lines_success"`
		} `json:"resource"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(body, &answer) != nil || answer.Resource.Success != int64(lines) {
		return nil, fmt.Errorf("upload: HTTP %d: %.500s", res.StatusCode, body)
	}
	stored, err := countObservations(ctx, p.DBURL, p.ProjectID)
	if err != nil {
		return nil, err
	}
	if stored != int64(lines) {
		return nil, fmt.Errorf("stored %d observations of %d lines", stored, lines)
	}
	return map[string]any{"scenario": "csv", "lines": lines, "datapoints": csvDatapoints, "bytes": size.n,
		"seconds": elapsed.Seconds(), "lines_per_s": float64(lines) / elapsed.Seconds()}, nil
}

// generateCSV writes lines lines: datapoint i%csvDatapoints, a value, and
// the minute i/csvDatapoints, so every (datapoint, time) is new. It is
// cheap, since it shares the machine with the platform it measures.
func generateCSV(w io.Writer, lines int) error {
	names := make([][]byte, csvDatapoints)
	for i := range names {
		names[i] = fmt.Appendf(nil, "building-%d/floor-%d/sensor-%d,", i/1000, i/100%10, i)
	}
	base := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	buf := make([]byte, 0, 256<<10)
	var stamp []byte
	for i := 0; i < lines; i++ {
		if i%csvDatapoints == 0 {
			stamp = base.Add(time.Duration(i/csvDatapoints)*time.Minute).AppendFormat(stamp[:0], time.RFC3339)
		}
		buf = append(buf, names[i%csvDatapoints]...)
		buf = strconv.AppendInt(buf, int64(i%5000), 10)
		buf = append(buf, '.', byte('0'+i%10), ',')
		buf = append(append(buf, stamp...), '\n')
		if len(buf) > 240<<10 {
			if _, err := w.Write(buf); err != nil {
				return err
			}
			buf = buf[:0]
		}
	}
	_, err := w.Write(buf)
	return err
}

func countObservations(ctx context.Context, dbURL string, projectID int64) (int64, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return 0, fmt.Errorf("connect for checks: %w", err)
	}
	defer conn.Close(ctx)
	var n int64
	err = conn.QueryRow(ctx, `SELECT count(*) FROM observations o JOIN datapoints d ON d.id = o.datapoint
		WHERE d.project_id = $1`, projectID).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count stored observations: %w", err)
	}
	return n, nil
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}
