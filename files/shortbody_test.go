package files_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/minio/minio-go/v7/pkg/signer"

	"github.com/openbdp/bdp/files"
	"github.com/openbdp/bdp/files/filestest"
)

// A PUT whose client stops sending before its Content-Length (bdp's own
// one-pass upload does so when the form turns out not to end right after
// the file) stores nothing: the store answers an error and no object
// appears, not an object of the bytes that did arrive.
func TestEmbeddedStoreRefusesAShortBody(t *testing.T) {
	cfg := filestest.Start(t)
	o, err := files.OpenObjects(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	const declared, sent = 1 << 20, 300 << 10
	key := "company/3/cut-off"
	conn := putHead(t, cfg, key, declared)
	if _, err := conn.Write([]byte(strings.Repeat("x", sent))); err != nil {
		t.Fatal(err)
	}
	_ = conn.CloseWrite()
	// The answer says the store is done with the request.
	_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "IncompleteBody") {
		t.Fatalf("a PUT of %d of its %d bytes answered %d %s, want 400 IncompleteBody", sent, declared, res.StatusCode, body)
	}
	var keys []string
	if err := o.Keys(context.Background(), key, func(k string, size int64, _ time.Time) error {
		keys = append(keys, fmt.Sprintf("%s:%d", k, size))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("objects after a short PUT: %v", keys)
	}
}

// putHead opens a connection to the store and sends the signed head of a
// PUT of key with an unsigned payload of size bytes, none of them yet.
func putHead(t *testing.T, cfg files.ObjectsConfig, key string, size int64) *net.TCPConn {
	t.Helper()
	req, err := http.NewRequest(http.MethodPut, "http://"+cfg.Endpoint+"/"+cfg.Bucket+"/"+key, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = size
	req.Header.Set("X-Amz-Content-Sha256", "UNSIGNED-PAYLOAD")
	req.Header.Set("Content-Length", fmt.Sprint(size))
	signed := signer.SignV4(*req, cfg.AccessKey, cfg.SecretKey, "", files.DefaultRegion)
	c, err := net.Dial("tcp", cfg.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	var head strings.Builder
	fmt.Fprintf(&head, "PUT %s HTTP/1.1\r\nHost: %s\r\n", signed.URL.RequestURI(), cfg.Endpoint)
	_ = signed.Header.Write(&head)
	head.WriteString("\r\n")
	if _, err := c.Write([]byte(head.String())); err != nil {
		t.Fatal(err)
	}
	return c.(*net.TCPConn)
}
