// Package relay is the wire format of the relay of stored observations
// between the nodes of a cluster (codec/relaypb/relay.proto): one
// message is what one node committed of one project in one batch, as
// runs of one datapoint each, in the order the router delivers them.
//
// It is a package of its own, not a file of codec, because it encodes
// with protobuf, and codec imports the standard library only
// (TestImportsOnlyTheStandardLibrary); like codec it is pure: bytes in,
// values out, no I/O and no pipeline types.
package relay

import (
	"errors"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/codec/relaypb"
)

// Batch is one project's observations of one committed batch.
type Batch struct {
	ProjectID int64
	Runs      []Run
}

// Run is one datapoint's observations in time order: Times[i] (Unix
// microseconds, the precision the store keeps) has Values[i].
type Run struct {
	DataPointID string
	Times       []int64
	Values      []float64
}

// Observations counts the batch's observations.
func (b Batch) Observations() int {
	n := 0
	for _, r := range b.Runs {
		n += len(r.Times)
	}
	return n
}

// Marshal encodes b. It shares nothing with b: the caller may reuse b's
// slices once it returns.
func Marshal(b Batch) ([]byte, error) {
	if b.ProjectID <= 0 {
		return nil, fmt.Errorf("relay: project id %d", b.ProjectID)
	}
	// One allocation for the runs and one for the time differences of all
	// of them, rather than two per run.
	runs := make([]relaypb.Run, len(b.Runs))
	ptrs := make([]*relaypb.Run, len(b.Runs))
	deltas := make([]int64, b.Observations())
	for i, r := range b.Runs {
		if len(r.Times) != len(r.Values) {
			return nil, fmt.Errorf("relay: datapoint %q has %d times and %d values", r.DataPointID, len(r.Times), len(r.Values))
		}
		d := deltas[:len(r.Times):len(r.Times)]
		deltas = deltas[len(r.Times):]
		var prev int64
		for j, t := range r.Times {
			d[j], prev = t-prev, t
		}
		runs[i].DataPointId, runs[i].TimeUs, runs[i].Value = r.DataPointID, d, r.Values
		ptrs[i] = &runs[i]
	}
	out, err := proto.Marshal(&relaypb.Batch{ProjectId: b.ProjectID, Runs: ptrs})
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return out, nil
}

// Unmarshal decodes a message of Marshal. It refuses a message whose
// runs are not whole (as many times as values) or name no acceptable
// datapoint, so that the router is never handed a half observation. The
// result shares no memory with data.
func Unmarshal(data []byte) (Batch, error) {
	var m relaypb.Batch
	if err := proto.Unmarshal(data, &m); err != nil {
		return Batch{}, fmt.Errorf("relay: %w", err)
	}
	if m.ProjectId <= 0 {
		return Batch{}, fmt.Errorf("relay: project id %d", m.ProjectId)
	}
	b := Batch{ProjectID: m.ProjectId, Runs: make([]Run, len(m.Runs))}
	for i, r := range m.Runs {
		if len(r.TimeUs) != len(r.Value) {
			return Batch{}, fmt.Errorf("relay: datapoint %q has %d times and %d values", r.DataPointId, len(r.TimeUs), len(r.Value))
		}
		if err := codec.ValidateDataPointID(r.DataPointId); err != nil {
			return Batch{}, fmt.Errorf("relay: %w", err)
		}
		// The differences become times in place: the slice is ours.
		var t int64
		for j, d := range r.TimeUs {
			t += d
			r.TimeUs[j] = t
		}
		b.Runs[i] = Run{DataPointID: r.DataPointId, Times: r.TimeUs, Values: r.Value}
	}
	return b, nil
}

// Bounds of the encoding's overhead, for Split: a batch's own fields, and
// a run's apart from its datapoint id and its observations (the run's
// tag and length in the batch, and the tag and length of each of its
// three fields, a length taking up to 5 bytes).
const (
	batchOverhead = 1 + 10 // the project id: a tag and up to 10 bytes
	runOverhead   = 4 * (1 + 5)
)

// ErrTooSmall is Split's answer when not even one observation of a run
// fits the limit.
var ErrTooSmall = errors.New("relay: the message size limit is too small for one observation")

// Split cuts b into batches whose encoding (Marshal) takes at most
// maxBytes each, so that each fits in one Kafka message; in order, they
// are b. It cuts between runs, and a run too large for a message of its
// own into pieces in time order, each a run of the same datapoint. The
// batches share b's slices; a batch that fits comes back alone.
func Split(b Batch, maxBytes int) ([]Batch, error) {
	if size(b) <= maxBytes {
		return []Batch{b}, nil
	}
	var out []Batch
	cur, room := Batch{ProjectID: b.ProjectID}, maxBytes-batchOverhead
	next := func() {
		out = append(out, cur)
		cur, room = Batch{ProjectID: b.ProjectID}, maxBytes-batchOverhead
	}
	for _, r := range b.Runs {
		base := runOverhead + len(r.DataPointID)
		if s := base + pointsSize(r.Times); s <= maxBytes-batchOverhead {
			if s > room {
				next()
			}
			cur.Runs = append(cur.Runs, r)
			room -= s
			continue
		}
		// Too large for a message of its own: in pieces, the first
		// filling the room of the current message.
		for lo := 0; lo < len(r.Times); {
			hi, s := lo, base
			for hi < len(r.Times) {
				ps := 8 + varintSize(r.Times, lo, hi)
				if s+ps > room {
					break
				}
				s += ps
				hi++
			}
			if hi == lo {
				if len(cur.Runs) == 0 {
					return nil, ErrTooSmall
				}
				next()
				continue
			}
			cur.Runs = append(cur.Runs, Run{DataPointID: r.DataPointID, Times: r.Times[lo:hi:hi], Values: r.Values[lo:hi:hi]})
			room -= s
			lo = hi
		}
	}
	if len(cur.Runs) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// size bounds the encoding of b.
func size(b Batch) int {
	n := batchOverhead
	for _, r := range b.Runs {
		n += runOverhead + len(r.DataPointID) + pointsSize(r.Times)
	}
	return n
}

// pointsSize bounds the encoding of a run's observations.
func pointsSize(times []int64) int {
	n := 8 * len(times)
	for i := range times {
		n += varintSize(times, 0, i)
	}
	return n
}

// varintSize is the size of times[i] as encoded in a run that starts at
// times[lo]: absolute at the start, else the difference to the time
// before.
func varintSize(times []int64, lo, i int) int {
	d := times[i]
	if i > lo {
		d -= times[i-1]
	}
	return protowire.SizeVarint(protowire.EncodeZigZag(d))
}
