package main

import (
	"bytes"
	"encoding/json"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"

	"github.com/openbdp/bdp/files/filestest"
)

// bdp serve answers the file routes on its object store, the embedded one
// and an external one: an upload comes back through its link.
func TestServeFileRoutes(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  func(t *testing.T) []string
	}{
		{"embedded store", func(*testing.T) []string { return nil }},
		{"external store", func(t *testing.T) []string {
			ext := filestest.Start(t)
			return []string{"BDP_S3_ENDPOINT=http://" + ext.Endpoint, "BDP_S3_ACCESS_KEY=" + ext.AccessKey,
				"BDP_S3_SECRET_KEY=" + ext.SecretKey, "BDP_S3_BUCKET=bdp-external"}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := startServe(t, newDataDir(t), tc.env(t)...)
			status, body := s.request("POST", "/operator/companies", operator,
				`{"name":"acme","admin":{"firstName":"A","lastName":"B","email":"a@acme.test","password":"acme-pw-12"}}`)
			if status != 201 {
				t.Fatalf("company: %d %s", status, body)
			}
			admin := basicAuth("a@acme.test", "acme-pw-12")

			var form bytes.Buffer
			w := multipart.NewWriter(&form)
			fw, _ := w.CreateFormFile("file", "plan.pdf")
			_, _ = fw.Write([]byte("%PDF the plan"))
			_ = w.Close()
			req, _ := http.NewRequest("POST", s.base+"/v2/company/file?folder=drawings", &form)
			req.Header.Set("Content-Type", w.FormDataContentType())
			admin(req)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != 201 {
				t.Fatalf("upload: %d", res.StatusCode)
			}

			status, body = s.request("GET", "/v2/company/file?path=drawings/plan.pdf&expiry=1m", admin, "")
			var link struct {
				DownloadLink string `json:"download_link"`
				SizeBytes    int64  `json:"size_bytes"`
			}
			if status != 200 || json.Unmarshal(body, &link) != nil || link.SizeBytes != 13 {
				t.Fatalf("link: %d %s", status, body)
			}
			if status, got := download(t, link.DownloadLink); status != 200 || got != "%PDF the plan" {
				t.Fatalf("download: %d %q", status, got)
			}
			status, body = s.request("GET", "/v2/company/quota", admin, "")
			if status != 200 || !strings.Contains(string(body), `"quota_used":{"files":1,"space_bytes":13}`) {
				t.Fatalf("quota: %d %s", status, body)
			}
		})
	}
}
