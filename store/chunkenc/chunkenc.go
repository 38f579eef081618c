// Package chunkenc encodes a sorted run of one datapoint's observations into
// a compact chunk and decodes it back bit for bit.
//
// A chunk is laid out as
//
//	version byte | uvarint n | [varint first µs | uvarint last-first
//	| times section | value section | fallback section]
//
// and each section as uvarint(length<<1 | zstd) and its bytes, compressed
// with zstd when that makes them smaller. The header is never compressed, so
// ParseHeader reports the count and the time bounds without decompressing
// anything. The times are delta-of-delta or grid-residual varints in the
// chunk's largest common step (times.go); the values are decimal mantissa
// residuals where a value is exactly a short decimal and integer differences
// of the float bits otherwise (values.go). Each section is its own zstd frame
// because zstd codes the literals of a block with one Huffman table: kept
// apart, jittered times and values each get a table of their own (measured
// 0.16 bytes a point smaller on jittered data, the same on the others).
//
// Observations from PostgreSQL are timestamptz, so times are Unix
// microseconds; values are any float64 bit pattern.
package chunkenc

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Version is the format version written as the first byte of every chunk.
// Decode rejects any other version, so a new format must take a new number.
const Version = 1

// MaxPoints bounds the points in one chunk. Chunks never cross a week, and a
// week at one point per second is 604,800 points; the bound lets Decode refuse
// a corrupt count before allocating for it.
const MaxPoints = 1 << 20

// ErrCorrupt is wrapped by every error Decode returns for input that is not a
// well-formed chunk: truncated, garbage or inconsistent.
var ErrCorrupt = errors.New("chunkenc: corrupt chunk")

// ErrVersion is wrapped by the error for a chunk written by an unknown
// format version.
var ErrVersion = errors.New("chunkenc: unknown chunk version")

// Point is one observation. The time is kept as Unix microseconds rather than
// a time.Time: it is what timestamptz stores, it makes Point 16 bytes without
// pointers (decoding a week is then a plain fill of memory the garbage
// collector need not scan), and merging and time-bucketing are integer work.
type Point struct {
	UnixMicro int64
	Value     float64
}

// PointAt makes a Point from a time.Time, truncated to the microsecond
// (PostgreSQL keeps no finer resolution).
func PointAt(t time.Time, v float64) Point { return Point{UnixMicro: t.UnixMicro(), Value: v} }

// Time is the point's time in UTC.
func (p Point) Time() time.Time { return time.UnixMicro(p.UnixMicro).UTC() }

// Header is what a chunk tells about itself without decoding its sections.
type Header struct {
	N     int   // number of points
	First int64 // Unix µs of the first point; 0 when N == 0
	Last  int64 // Unix µs of the last point; 0 when N == 0
}

// ParseHeader reads the uncompressed header of a chunk. It returns the
// header's length in bytes along with it, so Decode can go on from there.
func ParseHeader(data []byte) (Header, int, error) {
	if len(data) < 1 {
		return Header{}, 0, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	if data[0] != Version {
		return Header{}, 0, fmt.Errorf("%w: %d", ErrVersion, data[0])
	}
	i := 1
	n, k := binary.Uvarint(data[i:])
	if k <= 0 || n > MaxPoints {
		return Header{}, 0, fmt.Errorf("%w: bad point count", ErrCorrupt)
	}
	i += k
	h := Header{N: int(n)}
	if n == 0 {
		return h, i, nil
	}
	first, k := binary.Varint(data[i:])
	if k <= 0 {
		return Header{}, 0, fmt.Errorf("%w: bad first time", ErrCorrupt)
	}
	i += k
	span, k := binary.Uvarint(data[i:])
	// The last time must fit an int64: span <= MaxInt64-first, computed in
	// uint64 where it cannot overflow for any first.
	if k <= 0 || span > uint64(math.MaxInt64)-uint64(first) {
		return Header{}, 0, fmt.Errorf("%w: bad time span", ErrCorrupt)
	}
	i += k
	if n == 1 && span != 0 || n > 1 && span < n-1 {
		return Header{}, 0, fmt.Errorf("%w: time span %d does not fit %d points", ErrCorrupt, span, n)
	}
	h.First, h.Last = first, int64(uint64(first)+span)
	return h, i, nil
}

// Count is the number of points in a chunk, read from its header.
func Count(data []byte) (int, error) {
	h, _, err := ParseHeader(data)
	return h.N, err
}

// Codec encodes and decodes chunks. It holds one zstd encoder and one zstd
// decoder, made once because making them is far costlier than a chunk.
// A Codec is safe for concurrent use, but concurrent calls take turns on the
// single encoder and decoder; a worker pool wants one Codec per worker.
// Close releases it.
type Codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
	// bufs recycles the buffers Decode decompresses into and scratch the
	// encoder's working memory, so sealing and reading many chunks does not
	// allocate each time. Held per Codec: no package-level state.
	bufs    sync.Pool
	scratch sync.Pool
}

// NewCodec makes a Codec.
func NewCodec() (*Codec, error) {
	enc, err := zstd.NewWriter(nil,
		zstd.WithEncoderConcurrency(1),
		// SpeedBetterCompression: on a week of minute data, measured as small
		// as SpeedBestCompression (each wins some kinds by a few per cent) at
		// a tenth of its time, 10-60 ns a point.
		zstd.WithEncoderLevel(zstd.SpeedBetterCompression),
		// The sections are varints with skewed byte frequencies but few
		// repeats; without entropy coding of literal-only blocks (off by
		// default at the faster levels) zstd would store them raw.
		zstd.WithAllLitEntropyCompression(true),
		// Single-segment frames always declare their content size, which
		// Decode sizes its buffer by (and refuses frames without).
		zstd.WithSingleSegment(true),
		zstd.WithLowerEncoderMem(true),
	)
	if err != nil {
		return nil, fmt.Errorf("chunkenc: zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil,
		zstd.WithDecoderConcurrency(1),
		// Decode hands DecodeAll a buffer of the size the frame declares, and
		// the cap limit makes zstd refuse to go beyond it.
		zstd.WithDecodeAllCapLimit(true),
		zstd.WithDecoderMaxMemory(uint64(maxBody(MaxPoints))),
	)
	if err != nil {
		enc.Close()
		return nil, fmt.Errorf("chunkenc: zstd decoder: %w", err)
	}
	return &Codec{enc: enc, dec: dec}, nil
}

// Close releases the zstd encoder and decoder. The Codec must not be used
// afterwards.
func (c *Codec) Close() {
	c.dec.Close()
	_ = c.enc.Close()
}

// zstdSlack is room left after each section's decompressed bytes: with at
// least 16 bytes of it, zstd copies matches in 16-byte blocks that may run
// past their end, instead of byte-exact copies; measured a quarter faster on
// sections with many short matches.
const zstdSlack = 64

// maxBody is the largest the sections of n points can decode to: at most 10
// bytes per time varint, 10 per value (a mantissa or a fallback varint), a
// tag bit per value and a few bytes of section headers.
func maxBody(n int) int { return 20*n + n/8 + 64 }

func (c *Codec) getBuf(size int) *[]byte {
	if p, ok := c.bufs.Get().(*[]byte); ok && cap(*p) >= size {
		return p
	}
	b := make([]byte, 0, size)
	return &b
}

// Encode appends the chunk encoding pts to dst. Times must be strictly
// increasing (the head table's primary key guarantees it; a violation is a
// caller bug, reported rather than stored), and len(pts) at most MaxPoints.
func (c *Codec) Encode(dst []byte, pts []Point) ([]byte, error) {
	if len(pts) > MaxPoints {
		return dst, fmt.Errorf("chunkenc: %d points, more than %d", len(pts), MaxPoints)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].UnixMicro <= pts[i-1].UnixMicro {
			return dst, fmt.Errorf("chunkenc: times not strictly increasing at point %d (%d after %d)",
				i, pts[i].UnixMicro, pts[i-1].UnixMicro)
		}
	}
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, uint64(len(pts)))
	if len(pts) == 0 {
		return dst, nil
	}
	first, last := pts[0].UnixMicro, pts[len(pts)-1].UnixMicro
	dst = binary.AppendVarint(dst, first)
	dst = binary.AppendUvarint(dst, uint64(last)-uint64(first))

	s := c.getScratch(len(pts))
	defer c.scratch.Put(s)
	s.secs[0] = appendTimes(s.secs[0][:0], pts, s)
	s.secs[1], s.secs[2] = s.appendValues(s.secs[1][:0], s.secs[2][:0], pts)
	for _, sec := range s.secs {
		// Below a few dozen bytes a zstd frame (magic, header, checksum)
		// cannot pay for itself.
		if len(sec) >= 32 {
			s.zbuf = c.enc.EncodeAll(sec, s.zbuf[:0])
			if len(s.zbuf) < len(sec) {
				dst = binary.AppendUvarint(dst, uint64(len(s.zbuf))<<1|1)
				dst = append(dst, s.zbuf...)
				continue
			}
		}
		dst = binary.AppendUvarint(dst, uint64(len(sec))<<1)
		dst = append(dst, sec...)
	}
	return dst, nil
}

// Decode appends the points of a chunk to dst. It returns an error wrapping
// ErrVersion or ErrCorrupt for anything that is not a chunk Encode wrote,
// and never allocates more than the header's bounded count calls for.
func (c *Codec) Decode(dst []Point, data []byte) ([]Point, error) {
	h, i, err := ParseHeader(data)
	if err != nil {
		return dst, err
	}
	if h.N == 0 {
		if i != len(data) {
			return dst, fmt.Errorf("%w: %d bytes after an empty chunk", ErrCorrupt, len(data)-i)
		}
		return dst, nil
	}
	// First the sections' extents and, for compressed ones, the content size
	// their zstd frame header declares (Encode always writes it): their sum,
	// bounded by what n points can need, sizes the one buffer they all
	// decompress into, and zstd is held to each one's share of it
	// (WithDecodeAllCapLimit), so garbage cannot make it allocate more.
	var secs [3][]byte
	var sizes [3]int // decompressed size; -1 for a raw section
	total, nz := 0, 0
	for k := range secs {
		l, j := uvarint(data, i)
		if j < 0 || l>>1 > uint64(len(data)-j) {
			return dst, fmt.Errorf("%w: bad section length", ErrCorrupt)
		}
		secs[k], i, sizes[k] = data[j:j+int(l>>1)], j+int(l>>1), -1
		if l&1 != 0 {
			var zh zstd.Header
			if err := zh.Decode(secs[k]); err != nil || !zh.HasFCS ||
				zh.FrameContentSize > uint64(maxBody(h.N)-total) {
				return dst, fmt.Errorf("%w: bad zstd frame header", ErrCorrupt)
			}
			sizes[k] = int(zh.FrameContentSize)
			total, nz = total+sizes[k], nz+1
		}
	}
	if i != len(data) {
		return dst, fmt.Errorf("%w: %d bytes after the last section", ErrCorrupt, len(data)-i)
	}
	if nz > 0 {
		bp := c.getBuf(total + nz*zstdSlack)
		defer c.bufs.Put(bp)
		used := 0
		for k, size := range sizes {
			if size < 0 {
				continue
			}
			out, err := c.dec.DecodeAll(secs[k], (*bp)[used:used:used+size+zstdSlack])
			if err != nil {
				return dst, fmt.Errorf("%w: zstd: %w", ErrCorrupt, err)
			}
			if len(out) != size {
				return dst, fmt.Errorf("%w: zstd frame of %d bytes declared %d", ErrCorrupt, len(out), size)
			}
			secs[k], used = out, used+size+zstdSlack
		}
	}
	// Every point after the first has a varint of its own in the times,
	// so a count the times cannot back is refused before allocating for it.
	if len(secs[0]) < h.N-1 {
		return dst, fmt.Errorf("%w: %d bytes of times for %d points", ErrCorrupt, len(secs[0]), h.N)
	}
	start := len(dst)
	dst = grow(dst, h.N)
	pts := dst[start:]
	if err := decodeTimes(pts, secs[0], h); err != nil {
		return dst[:start], err
	}
	if err := decodeValues(pts, secs[1], secs[2]); err != nil {
		return dst[:start], err
	}
	return dst, nil
}

// grow extends dst by n points, reallocating at most once.
func grow(dst []Point, n int) []Point {
	if cap(dst)-len(dst) < n {
		d := make([]Point, len(dst), len(dst)+n)
		copy(d, dst)
		dst = d
	}
	return dst[:len(dst)+n]
}
