package files

import (
	"context"
	"io"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/versity/versitygw/backend"
	"github.com/versity/versitygw/s3err"
	"github.com/versity/versitygw/s3response"
)

// wholeBodies is the embedded store's backend with one repair: a PUT (or a
// part of a multipart upload) whose body ends before its Content-Length is
// refused with S3's IncompleteBody, as S3 refuses it. The posix backend
// itself keeps the bytes that arrived (it truncates a short body to its
// length, for browser POSTs whose Content-Length counts an epilogue) and
// answers 200, so a client that gives up mid-body left a cut-off object
// behind: bdp's one-pass upload gives up exactly so when a form does not end
// right after its file.
type wholeBodies struct {
	backend.Backend
}

func (w wholeBodies) PutObject(ctx context.Context, in s3response.PutObjectInput) (s3response.PutObjectOutput, error) {
	if in.ContentLength != nil && in.Body != nil {
		in.Body = &wholeBody{r: in.Body, left: *in.ContentLength}
	}
	return w.Backend.PutObject(ctx, in)
}

func (w wholeBodies) UploadPart(ctx context.Context, in *s3.UploadPartInput) (*s3.UploadPartOutput, error) {
	if in != nil && in.ContentLength != nil && in.Body != nil {
		part := *in
		part.Body = &wholeBody{r: in.Body, left: *in.ContentLength}
		in = &part
	}
	return w.Backend.UploadPart(ctx, in)
}

// wholeBody reads r, which should hold left bytes, and turns an end before
// them into IncompleteBody.
type wholeBody struct {
	r    io.Reader
	left int64
}

func (b *wholeBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	b.left -= int64(n)
	if err == io.EOF && b.left > 0 {
		return n, s3err.GetAPIError(s3err.ErrIncompleteBody)
	}
	return n, err
}
