package files

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/minio/minio-go/v7"
)

// partResult is what uploading one part gives back.
type partResult struct {
	part minio.CompletePart
	err  error
}

// putStream stores a body of unknown length. A body that ends within the
// first part is sent as one PUT. A longer one becomes a multipart upload
// with two buffers: the next part is read while the previous one is sent,
// so memory stays at 2*PartSize whatever the size. Any failure (the reader,
// the store, ctx) aborts the upload so the store keeps no parts.
func (o *Objects) putStream(ctx context.Context, key string, r io.Reader) (stored int64, err error) {
	select {
	case o.streams <- struct{}{}:
		defer func() { <-o.streams }()
	case <-ctx.Done():
		return 0, fmt.Errorf("put %s: waiting for one of %d upload slots: %w", key, MaxStreams, ctx.Err())
	}
	firstBuf := o.partBuffer()
	defer o.parts.Put(firstBuf)
	first := *firstBuf
	n, rerr := io.ReadFull(r, first)
	switch {
	case errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF):
		return o.putKnown(ctx, key, bytes.NewReader(first[:n]), int64(n))
	case rerr != nil:
		return 0, fmt.Errorf("put %s: read: %w", key, rerr)
	}

	secondBuf := o.partBuffer()
	defer o.parts.Put(secondBuf)
	bufs := [2][]byte{first, *secondBuf}

	uploadID, err := o.core.NewMultipartUpload(ctx, o.bucket, key, streamedPut)
	if err != nil {
		return 0, fmt.Errorf("put %s: start multipart upload: %w", key, err)
	}
	defer func() {
		if err == nil {
			return
		}
		// The caller's ctx may be the reason for failing; the abort must
		// still reach the store.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if aerr := o.core.AbortMultipartUpload(actx, o.bucket, key, uploadID); aerr != nil && !isNotFound(aerr) {
			err = errors.Join(err, fmt.Errorf("abort multipart upload of %s: %w", key, aerr))
		}
	}()

	data, last := first[:n], false
	var parts []minio.CompletePart
	for num := 1; ; num++ {
		done := make(chan partResult, 1)
		go func(num int, data []byte) {
			p, err := o.core.PutObjectPart(ctx, o.bucket, key, uploadID, num,
				bytes.NewReader(data), int64(len(data)), minio.PutObjectPartOptions{DisableContentSha256: true})
			done <- partResult{minio.CompletePart{PartNumber: num, ETag: p.ETag}, err}
		}(num, data)

		// Read the next part while this one is sent; its buffer is the one
		// the previous part used, which has been sent already.
		var next []byte
		if !last {
			next = bufs[num%2]
			n, rerr = io.ReadFull(r, next)
		}
		res := <-done
		if res.err != nil {
			return 0, fmt.Errorf("put %s: part %d: %w", key, num, res.err)
		}
		parts = append(parts, res.part)
		stored += int64(len(data))
		if last || errors.Is(rerr, io.EOF) {
			break
		}
		switch {
		case errors.Is(rerr, io.ErrUnexpectedEOF):
			last = true
		case rerr != nil:
			return 0, fmt.Errorf("put %s: read: %w", key, rerr)
		}
		if num == maxParts {
			return 0, fmt.Errorf("put %s: more than %d parts of %d bytes", key, maxParts, PartSize)
		}
		data = next[:n]
	}
	if _, err := o.core.CompleteMultipartUpload(ctx, o.bucket, key, uploadID, parts, streamedPut); err != nil {
		return 0, fmt.Errorf("put %s: complete multipart upload: %w", key, err)
	}
	return stored, nil
}

// partBuffer is a PartSize buffer, recycled across uploads.
func (o *Objects) partBuffer() *[]byte {
	if b, ok := o.parts.Get().(*[]byte); ok {
		return b
	}
	b := make([]byte, PartSize)
	return &b
}
