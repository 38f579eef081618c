package bench

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/openbdp/bdp/files"
)

// FilesOptions configure `bdp-bench files`: the document store's upload
// and download through bdp against minio-go straight to the same store,
// and bdp's memory during a large upload.
type FilesOptions struct {
	Binary     string
	Rounds     int   // measurements of each side, interleaved
	SizeBytes  int64 // the file of the throughput rounds
	LargeBytes int64 // the upload whose RSS growth is measured
	Bucket     string
	Progress   io.Writer
}

// directPutOptions are how the direct side writes: one streamed PUT of a
// known size, with neither SHA-256 payload hashing nor a checksum
// trailer, the fastest way minio-go has to this store (issue 12's spike:
// 356 MB/s against 97 MB/s with the defaults), so bdp is held to the best
// a client could do without it.
func directPutOptions() minio.PutObjectOptions {
	return minio.PutObjectOptions{DisableMultipart: true, DisableContentSha256: true, AutoChecksum: minio.ChecksumNone,
		ContentType: "application/octet-stream"}
}

// Files measures bdp's document store (issue 12's figures) on a fresh
// bdp serve whose embedded S3 store gets root keys this process knows,
// so minio-go can use the very same store directly.
//
// First one LargeBytes upload through bdp, right after start (a warm-up
// upload would have the buffers the figure is about already allocated),
// with bdp's VmRSS sampled every 20 ms: rss_growth_mib is the largest
// sample less VmRSS before, hwm_growth_mib the same from VmHWM (reset
// before), which also catches a peak between samples. The upload is then
// downloaded through its link and checked.
//
// Then Rounds rounds of a SizeBytes file, the direct side and bdp's in
// turn (who goes first alternates): direct = minio-go PutObject and
// GetObject; bdp = POST /v2/project/{id}/file (a multipart form streamed
// with its Content-Length, as curl sends it) and, for the download, GET
// /v2/project/{id}/file?path=.. for the link plus a plain GET of the
// link, timed together. Every download is read to its end and its length
// and CRC-32C compared with what was generated, so a route that stores or
// serves the wrong bytes fails instead of looking fast. MB/s are 10^6
// bytes of file content per second; the ratios are bdp's median over the
// direct median. bdp_upload_cpu_ms and direct_upload_cpu_ms are bdp
// serve's CPU during an upload of each side (for the direct side, its
// embedded store's share alone): where a low upload_ratio comes from.
func Files(ctx context.Context, o FilesOptions) (map[string]any, error) {
	progress := func(format string, args ...any) {
		if o.Progress != nil {
			fmt.Fprintf(o.Progress, "files: "+format+"\n", args...)
		}
	}
	if o.Rounds < 1 || o.SizeBytes <= 0 || o.LargeBytes <= 0 {
		return nil, fmt.Errorf("files: want at least one round and positive sizes, have %d rounds of %d bytes, large %d bytes", o.Rounds, o.SizeBytes, o.LargeBytes)
	}
	load0 := loadAverage()
	access, secret := randomHex(10), randomHex(20)
	p, err := Start(ctx, Options{Binary: o.Binary, Env: []string{"BDP_S3_ACCESS_KEY=" + access, "BDP_S3_SECRET_KEY=" + secret}})
	if err != nil {
		return nil, err
	}
	defer p.Close()
	endpoint, secure, err := storeAddress(p.dir)
	if err != nil {
		return nil, err
	}
	mc, err := minio.New(endpoint, &minio.Options{Creds: credentials.NewStaticV4(access, secret, ""), Secure: secure, Region: files.DefaultRegion})
	if err != nil {
		return nil, fmt.Errorf("minio client for %s: %w", endpoint, err)
	}
	if ok, err := mc.BucketExists(ctx, o.Bucket); err != nil || !ok {
		return nil, fmt.Errorf("bucket %q on bdp's store %s: exists %v, %v", o.Bucket, endpoint, ok, err)
	}
	// Room for the large file and a round's files; the reservation of an
	// upload is bounded by its Content-Length, a little over the file.
	quota := map[string]any{"files": 1000, "space_bytes": 2*o.LargeBytes + 4*o.SizeBytes, "file_size_bytes": max(o.LargeBytes, o.SizeBytes) + 1<<20}
	if err := p.Do(ctx, "PUT", fmt.Sprintf("/operator/projects/%d/quota", p.ProjectID), quota, nil, true); err != nil {
		return nil, err
	}
	fc := &filesClient{p: p, mc: mc, bucket: o.Bucket, http: &http.Client{Transport: &http.Transport{
		Proxy: nil, DisableCompression: true, MaxIdleConnsPerHost: 4, IdleConnTimeout: time.Minute}}}
	// The first Basic request hashes the password (argon2id, 64 MiB) and
	// caches it: done here, not inside the measured upload.
	if err := p.Do(ctx, "GET", "/v2/user", nil, nil, false); err != nil {
		return nil, err
	}

	result := map[string]any{"scenario": "files", "file_bytes": o.SizeBytes, "large_bytes": o.LargeBytes, "rounds": o.Rounds,
		"direct_put": "minio-go PutObject, one streamed PUT, no SHA-256, no checksum", "loadavg_before": load0}
	progress("bdp serve up, store %s; uploading %d MiB through bdp with its RSS sampled", endpoint, o.LargeBytes>>20)
	if err := fc.largeUpload(ctx, o.LargeBytes, result); err != nil {
		return nil, err
	}

	var upDirect, upBDP, downDirect, downBDP, linkMS, cpuDirect, cpuBDP []float64
	pid := p.cmd.Process.Pid
	// bdp's own CPU (utime+stime) during an upload, in ms: for the direct
	// side that is the embedded store's share, for bdp's the store's plus
	// the route's, which tells where a low ratio comes from.
	cpuDuring := func(into *[]float64, f func() error) error {
		c0, err := processCPU(pid)
		if err != nil {
			return err
		}
		if err := f(); err != nil {
			return err
		}
		c1, err := processCPU(pid)
		*into = append(*into, float64((c1 - c0).Milliseconds()))
		return err
	}
	mbps := func(d time.Duration) float64 { return round(float64(o.SizeBytes) / d.Seconds() / 1e6) }
	for r := 0; r < o.Rounds; r++ {
		seed := uint64(r + 1)
		wantN, wantSum, err := contentSum(o.SizeBytes, seed)
		if err != nil {
			return nil, err
		}
		check := func(side string, n int64, sum uint32) error {
			if n != wantN || sum != wantSum {
				return fmt.Errorf("round %d, %s download: %d bytes, CRC-32C %08x; uploaded %d bytes, %08x", r, side, n, sum, wantN, wantSum)
			}
			return nil
		}
		key, name := fmt.Sprintf("bench/direct-%d.bin", r), fmt.Sprintf("round-%d.bin", r)
		var path string
		direct := func() error {
			return cpuDuring(&cpuDirect, func() error {
				d, err := fc.directPut(ctx, key, o.SizeBytes, seed)
				upDirect = append(upDirect, mbps(d))
				return err
			})
		}
		viaBDP := func() error {
			return cpuDuring(&cpuBDP, func() (err error) {
				var d time.Duration
				d, path, err = fc.upload(ctx, "bench", name, o.SizeBytes, seed)
				upBDP = append(upBDP, mbps(d))
				return err
			})
		}
		directDown := func() error {
			d, n, sum, err := fc.directGet(ctx, key)
			if err != nil {
				return err
			}
			downDirect = append(downDirect, mbps(d))
			return check("direct", n, sum)
		}
		bdpDown := func() error {
			d, link, n, sum, err := fc.download(ctx, path)
			if err != nil {
				return err
			}
			downBDP, linkMS = append(downBDP, mbps(d)), append(linkMS, round(float64(link.Microseconds())/1000))
			return check("bdp", n, sum)
		}
		steps := []func() error{direct, viaBDP, directDown, bdpDown}
		if r%2 == 1 {
			steps = []func() error{viaBDP, direct, bdpDown, directDown}
		}
		for _, step := range steps {
			if err := step(); err != nil {
				return nil, err
			}
		}
		if err := mc.RemoveObject(ctx, o.Bucket, key, minio.RemoveObjectOptions{}); err != nil {
			return nil, fmt.Errorf("remove %s: %w", key, err)
		}
		if err := fc.delete(ctx, path); err != nil {
			return nil, err
		}
		progress("round %d: upload %.0f MB/s bdp, %.0f direct; download %.0f bdp, %.0f direct", r+1,
			upBDP[r], upDirect[r], downBDP[r], downDirect[r])
	}
	for k, v := range map[string]any{
		"upload_ratio":         round(Median(upBDP) / Median(upDirect)),
		"download_ratio":       round(Median(downBDP) / Median(downDirect)),
		"bdp_upload_mb_s":      Median(upBDP),
		"direct_upload_mb_s":   Median(upDirect),
		"bdp_download_mb_s":    Median(downBDP),
		"direct_download_mb_s": Median(downDirect),
		"link_ms":              Median(linkMS),
		"bdp_upload_cpu_ms":    Median(cpuBDP),
		"direct_upload_cpu_ms": Median(cpuDirect),
		"bdp_upload_raw":       upBDP, "direct_upload_raw": upDirect, "bdp_download_raw": downBDP, "direct_download_raw": downDirect,
		"loadavg_after": loadAverage(),
	} {
		result[k] = v
	}
	return result, nil
}

// largeUpload uploads size bytes through bdp with bdp's RSS sampled,
// checks them through their link and deletes the file, adding the
// memory figures to result.
func (fc *filesClient) largeUpload(ctx context.Context, size int64, result map[string]any) error {
	const seed = 1 << 20
	wantN, wantSum, err := contentSum(size, seed)
	if err != nil {
		return err
	}
	pid := fc.p.cmd.Process.Pid
	time.Sleep(time.Second) // let start-up's work settle
	if err := ResetPeakMemory(pid); err != nil {
		return err
	}
	_, before, err := ProcessMemory(pid)
	if err != nil {
		return err
	}
	sampler := sampleRSS(ctx, pid, 20*time.Millisecond)
	d, path, err := fc.upload(ctx, "bench", "large.bin", size, seed)
	maxRSS, samples, serr := sampler.Stop()
	if err != nil {
		return err
	}
	if serr != nil {
		return serr
	}
	peak, _, err := ProcessMemory(pid)
	if err != nil {
		return err
	}
	_, _, n, sum, err := fc.download(ctx, path)
	if err != nil {
		return err
	}
	if n != wantN || sum != wantSum {
		return fmt.Errorf("large file download: %d bytes, CRC-32C %08x; uploaded %d bytes, %08x", n, sum, wantN, wantSum)
	}
	if err := fc.delete(ctx, path); err != nil {
		return err
	}
	mib := func(b int64) float64 { return round(float64(b) / (1 << 20)) }
	result["rss_before_mib"], result["rss_max_mib"], result["rss_samples"] = mib(before), mib(maxRSS), samples
	result["rss_growth_mib"], result["hwm_growth_mib"] = mib(maxRSS-before), mib(peak-before)
	result["large_upload_mb_s"] = round(float64(size) / d.Seconds() / 1e6)
	return nil
}

// filesClient speaks to bdp's file routes as the company admin and to the
// store directly.
type filesClient struct {
	p      *Platform
	mc     *minio.Client
	bucket string
	http   *http.Client // bdp's routes and the links
}

func (fc *filesClient) directPut(ctx context.Context, key string, size int64, seed uint64) (time.Duration, error) {
	start := time.Now()
	info, err := fc.mc.PutObject(ctx, fc.bucket, key, newPattern(size, seed), size, directPutOptions())
	d := time.Since(start)
	if err != nil {
		return d, fmt.Errorf("direct PutObject %s: %w", key, err)
	}
	if info.Size != size {
		return d, fmt.Errorf("direct PutObject %s stored %d bytes of %d", key, info.Size, size)
	}
	return d, nil
}

func (fc *filesClient) directGet(ctx context.Context, key string) (time.Duration, int64, uint32, error) {
	start := time.Now()
	obj, err := fc.mc.GetObject(ctx, fc.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return 0, 0, 0, fmt.Errorf("direct GetObject %s: %w", key, err)
	}
	defer obj.Close()
	n, sum, err := checkedCopy(obj)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("direct GetObject %s: %w", key, err)
	}
	return time.Since(start), n, sum, nil
}

// upload sends a new file to the project's space and answers the time
// from the request's start to bdp's 201 and the path bdp answered.
func (fc *filesClient) upload(ctx context.Context, folder, name string, size int64, seed uint64) (time.Duration, string, error) {
	body, err := newMultipartUpload(name, size, seed)
	if err != nil {
		return 0, "", err
	}
	u := fmt.Sprintf("%s/v2/project/%d/file?folder=%s", fc.p.Base, fc.p.ProjectID, url.QueryEscape(folder))
	req, err := http.NewRequestWithContext(ctx, "POST", u, body.Body)
	if err != nil {
		return 0, "", err
	}
	req.ContentLength = body.ContentLength
	req.Header.Set("Content-Type", body.ContentType)
	req.SetBasicAuth(fc.p.Email, fc.p.Password)
	start := time.Now()
	var out struct {
		Success  bool `json:"success"`
		Resource struct {
			Path string `json:"path"`
		} `json:"resource"`
	}
	status, err := fc.call(req, &out)
	d := time.Since(start)
	if err != nil {
		return d, "", fmt.Errorf("upload %s/%s: %w", folder, name, err)
	}
	if want := folder + "/" + name; status != http.StatusCreated || !out.Success || out.Resource.Path != want {
		return d, "", fmt.Errorf("upload %s: HTTP %d, %+v; want 201 and path %s", want, status, out, want)
	}
	return d, out.Resource.Path, nil
}

// download asks bdp for the file's link and reads the link to its end,
// answering the time of both, the link's part of it, and the length and
// CRC-32C of what came.
func (fc *filesClient) download(ctx context.Context, path string) (total, link time.Duration, n int64, sum uint32, err error) {
	u := fmt.Sprintf("%s/v2/project/%d/file?path=%s", fc.p.Base, fc.p.ProjectID, url.QueryEscape(path))
	req, err := http.NewRequestWithContext(ctx, "GET", u, nil)
	if err != nil {
		return 0, 0, 0, 0, err
	}
	req.SetBasicAuth(fc.p.Email, fc.p.Password)
	start := time.Now()
	var out struct {
		DownloadLink string `json:"download_link"`
		Path         string `json:"path"`
	}
	status, err := fc.call(req, &out)
	link = time.Since(start)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("link for %s: %w", path, err)
	}
	if status != http.StatusOK || out.DownloadLink == "" {
		return 0, 0, 0, 0, fmt.Errorf("link for %s: HTTP %d, %+v", path, status, out)
	}
	req, err = http.NewRequestWithContext(ctx, "GET", out.DownloadLink, nil)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("link for %s: %w", path, err)
	}
	res, err := fc.http.Do(req)
	if err != nil {
		return 0, 0, 0, 0, fmt.Errorf("GET the link of %s: %w", path, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
		return 0, 0, 0, 0, fmt.Errorf("GET the link of %s: HTTP %d: %s", path, res.StatusCode, b)
	}
	if n, sum, err = checkedCopy(res.Body); err != nil {
		return 0, 0, 0, 0, fmt.Errorf("GET the link of %s: %w", path, err)
	}
	return time.Since(start), link, n, sum, nil
}

func (fc *filesClient) delete(ctx context.Context, path string) error {
	return fc.p.Do(ctx, "DELETE", fmt.Sprintf("/v2/project/%d/file?path=%s", fc.p.ProjectID, url.QueryEscape(path)), nil, nil, false)
}

// call sends req, decodes a JSON answer into out (any status) and
// answers the status; an answer that is not JSON is an error quoting it.
func (fc *filesClient) call(req *http.Request, out any) (int, error) {
	res, err := fc.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(io.LimitReader(res.Body, 1<<20))
	if err != nil {
		return res.StatusCode, err
	}
	if err := json.Unmarshal(b, out); err != nil {
		return res.StatusCode, fmt.Errorf("HTTP %d: %.300s", res.StatusCode, b)
	}
	if res.StatusCode/100 != 2 {
		return res.StatusCode, fmt.Errorf("HTTP %d: %.300s", res.StatusCode, b)
	}
	return res.StatusCode, nil
}

// storeAddress reads the store's address from bdp's addresses.json (key
// s3: host:port, or a URL) as minio-go wants it: host:port and whether
// it speaks TLS.
func storeAddress(dataDir string) (endpoint string, secure bool, err error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "addresses.json"))
	if err != nil {
		return "", false, err
	}
	var addrs map[string]string
	if err := json.Unmarshal(b, &addrs); err != nil {
		return "", false, fmt.Errorf("addresses.json: %w", err)
	}
	return parseStoreAddress(addrs["s3"])
}

func parseStoreAddress(s string) (endpoint string, secure bool, err error) {
	if s == "" {
		return "", false, fmt.Errorf("addresses.json has no s3 address")
	}
	if !strings.Contains(s, "://") {
		return s, false, nil
	}
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", false, fmt.Errorf("addresses.json: s3 address %q is neither host:port nor an http(s) URL", s)
	}
	return u.Host, u.Scheme == "https", nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b)
}
