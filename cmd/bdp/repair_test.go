package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// storeClient reaches the embedded object store of a running bdp serve
// with its root keys, to look at what bdp cannot show over HTTP: objects
// without a file and multipart uploads left open.
func storeClient(t *testing.T, dataDir string) *minio.Core {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "s3-credentials.json"))
	if err != nil {
		t.Fatal(err)
	}
	var keys s3Credentials
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	c, err := minio.NewCore(addresses(t, dataDir)["s3"], &minio.Options{
		Creds: credentials.NewStaticV4(keys.AccessKey, keys.SecretKey, ""), Region: "us-east-1", BucketLookup: minio.BucketLookupPath})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// storeState is every object key and every open multipart upload (key
// and parts stored) under prefix.
func storeState(t *testing.T, c *minio.Core, prefix string) (objects []string, uploads map[string]int) {
	t.Helper()
	ctx := context.Background()
	for obj := range c.Client.ListObjects(ctx, "bdp-files", minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if obj.Err != nil {
			t.Fatal(obj.Err)
		}
		objects = append(objects, obj.Key)
	}
	res, err := c.ListMultipartUploads(ctx, "bdp-files", prefix, "", "", "", 1000)
	if err != nil {
		t.Fatal(err)
	}
	uploads = map[string]int{}
	for _, u := range res.Uploads {
		parts, err := c.ListObjectParts(ctx, "bdp-files", u.Key, u.UploadID, 0, 1000)
		if err != nil {
			t.Fatal(err)
		}
		uploads[u.Key] = len(parts.ObjectParts)
	}
	return objects, uploads
}

type quotaAnswer struct {
	Files struct {
		Used struct {
			Files      int64 `json:"files"`
			SpaceBytes int64 `json:"space_bytes"`
		} `json:"quota_used"`
	} `json:"files"`
}

func (s *server) fileQuota(t *testing.T, projectID int64, auth func(*http.Request)) quotaAnswer {
	t.Helper()
	status, body := s.request("GET", fmt.Sprintf("/v2/project/%d/quota?service=files", projectID), auth, "")
	var q quotaAnswer
	if status != 200 || json.Unmarshal(body, &q) != nil {
		t.Fatalf("quota: %d %s", status, body)
	}
	return q
}

// uploadFile posts content as the form field file named name.
func (s *server) uploadFile(t *testing.T, projectID int64, auth func(*http.Request), name, content string) (int, string) {
	t.Helper()
	var body bytes.Buffer
	mw := multipart.NewWriter(&body)
	fw, err := mw.CreateFormFile("file", name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := fw.Write([]byte(content)); err != nil {
		t.Fatal(err)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest("POST", fmt.Sprintf("%s/v2/project/%d/file", s.base, projectID), &body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	auth(req)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// bdp killed with -9 while a large upload streams into the object store
// leaves a reservation holding quota and a multipart upload with parts;
// the next start releases the one and aborts the other, and the file's
// path can be uploaded again.
func TestServeRepairsAnUploadKilledMidway(t *testing.T) {
	dir := newDataDir(t)
	s := startServe(t, dir)
	pid := companyProject(t, s, "docs", "d@docs.test", "docs-pw-12")
	admin := basicAuth("d@docs.test", "docs-pw-12")
	if status, body := s.uploadFile(t, pid, admin, "kept.txt", "kept across the crash"); status != 201 {
		t.Fatalf("upload kept.txt: %d %s", status, body)
	}
	prefix := fmt.Sprintf("project/%d/", pid)
	keptObjects, _ := storeState(t, storeClient(t, dir), prefix)
	if len(keptObjects) != 1 {
		t.Fatalf("objects after one upload: %v", keptObjects)
	}

	// A large upload of unknown length (chunked), written 24 MiB ahead
	// and then held open: bdp has reserved its quota and stored parts of
	// it when it is killed.
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	req, err := http.NewRequest("POST", fmt.Sprintf("%s/v2/project/%d/file", s.base, pid), pr)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", mw.FormDataContentType())
	admin(req)
	go func() {
		if res, err := http.DefaultClient.Do(req); err == nil {
			res.Body.Close()
		}
	}()
	fw, err := mw.CreateFormFile("file", "big.bin")
	if err != nil {
		t.Fatal(err)
	}
	chunk := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	for range 24 {
		if _, err := fw.Write(chunk); err != nil {
			t.Fatalf("the upload ended early: %v\n%s", err, s.log)
		}
	}
	c := storeClient(t, dir)
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, uploads := storeState(t, c, prefix)
		if q := s.fileQuota(t, pid, admin); q.Files.Used.Files == 2 && len(uploads) == 1 && slices.Max(slices.Collect(maps.Values(uploads))) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no reservation and stored part of the large upload within 60 s; uploads %v\n%s", uploads, s.log)
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = s.stop(syscall.SIGKILL)
	pw.CloseWithError(fmt.Errorf("bdp was killed"))

	s = startServe(t, dir)
	objects, uploads := storeState(t, storeClient(t, dir), prefix)
	if !slices.Equal(objects, keptObjects) || len(uploads) != 0 {
		t.Fatalf("after the restart: objects %v (want %v), open uploads %v (want none)", objects, keptObjects, uploads)
	}
	q := s.fileQuota(t, pid, admin)
	if q.Files.Used.Files != 1 || q.Files.Used.SpaceBytes != int64(len("kept across the crash")) {
		t.Fatalf("quota used after the restart %+v, want only kept.txt", q.Files.Used)
	}
	status, body := s.request("GET", fmt.Sprintf("/v2/project/%d/files", pid), admin, "")
	if status != 200 || !strings.Contains(string(body), `"kept.txt"`) || strings.Contains(string(body), "big.bin") {
		t.Fatalf("files after the restart: %d %s", status, body)
	}
	// The crashed upload's path is free: no upload "in progress" blocks it.
	if status, body := s.uploadFile(t, pid, admin, "big.bin", "small now"); status != 201 {
		t.Fatalf("upload to the crashed upload's path: %d %s", status, body)
	}
}
