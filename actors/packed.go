package actors

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// A stored configuration stays with its running datapoint, which rebuilds
// its calculator from it on every restart. As JSON (about 250 bytes for two
// pins with their defaults) it was a tenth of a running datapoint's heap
// (issue 18); packed, with no key names or punctuation, it takes about a
// third of that. The decoded Config's strings are substrings of the packed
// one, so the calculator built from it holds no copies of its own either.
//
// The format: a map's length, or 0 for a nil map, then per pin its name,
// dataPointID, count (0 when absent, else 1 and the count), time, start,
// end, aggregate and trigger; then the parameters, each its key, a kind
// byte and a string or a float64's bits. Lengths and counts are varints.
// Unpacking gives what json.Unmarshal gave for the JSON it was packed from.

// packedTag starts a packed configuration, which a JSON one never does.
const packedTag = 0

// Kinds of parameter values: what encoding/json decodes into an any.
const (
	kindString = iota
	kindNumber
)

// packConfig packs cfg; ok is false when a parameter is neither a string
// nor a number (none of the types has one), and the JSON is kept instead.
func packConfig(cfg Config) (packed string, ok bool) {
	b := []byte{packedTag}
	b = appendLen(b, cfg.Pins == nil, len(cfg.Pins))
	for name, p := range cfg.Pins {
		b = appendString(b, name)
		b = appendString(b, p.DataPointID)
		if p.DataRange.Count == nil {
			b = append(b, 0)
		} else {
			b = append(b, 1)
			b = binary.AppendVarint(b, int64(*p.DataRange.Count))
		}
		for _, s := range []string{p.DataRange.Time, p.DataRange.Start, p.DataRange.End, p.Aggregate, p.Trigger} {
			b = appendString(b, s)
		}
	}
	b = appendLen(b, cfg.Parameters == nil, len(cfg.Parameters))
	for key, v := range cfg.Parameters {
		b = appendString(b, key)
		switch v := v.(type) {
		case string:
			b = appendString(append(b, kindString), v)
		case float64:
			b = binary.LittleEndian.AppendUint64(append(b, kindNumber), math.Float64bits(v))
		default:
			return "", false
		}
	}
	return string(b), true
}

// appendLen appends a map's length plus one, or 0 for a nil map.
func appendLen(b []byte, isNil bool, n int) []byte {
	if isNil {
		return binary.AppendUvarint(b, 0)
	}
	return binary.AppendUvarint(b, uint64(n)+1)
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

var errPacked = errors.New("packed configuration is corrupt")

// unpackConfig decodes what packConfig packed.
func unpackConfig(s string) (Config, error) {
	d := unpacker{s: s, i: 1} // past packedTag
	var cfg Config
	if n := d.uvarint(); n > 0 {
		cfg.Pins = make(map[string]PinConfig, n-1)
		for range n - 1 {
			name := d.string()
			var p PinConfig
			p.DataPointID = d.string()
			if d.byte() == 1 {
				c := int(d.varint())
				p.DataRange.Count = &c
			}
			p.DataRange.Time, p.DataRange.Start, p.DataRange.End = d.string(), d.string(), d.string()
			p.Aggregate, p.Trigger = d.string(), d.string()
			cfg.Pins[name] = p
		}
	}
	if n := d.uvarint(); n > 0 {
		cfg.Parameters = make(map[string]any, n-1)
		for range n - 1 {
			key := d.string()
			switch d.byte() {
			case kindString:
				cfg.Parameters[key] = d.string()
			case kindNumber:
				cfg.Parameters[key] = math.Float64frombits(d.uint64())
			default:
				d.bad = true
			}
		}
	}
	if d.bad || d.i != len(s) {
		return Config{}, fmt.Errorf("%w at byte %d of %d", errPacked, d.i, len(s))
	}
	return cfg, nil
}

// unpacker reads a packed configuration; a read past its end sets bad and
// returns zero values, checked once at the end.
type unpacker struct {
	s   string
	i   int
	bad bool
}

func (d *unpacker) uvarint() uint64 {
	v, n := binary.Uvarint([]byte(d.s[min(d.i, len(d.s)):min(d.i+binary.MaxVarintLen64, len(d.s))]))
	if n <= 0 {
		d.bad = true
		return 0
	}
	d.i += n
	return v
}

// varint undoes binary.AppendVarint's zig-zag encoding over uvarint, as
// binary.Varint does.
func (d *unpacker) varint() int64 {
	u := d.uvarint()
	return int64(u>>1) ^ -int64(u&1)
}

func (d *unpacker) byte() byte {
	if d.i >= len(d.s) {
		d.bad = true
		return 0
	}
	d.i++
	return d.s[d.i-1]
}

func (d *unpacker) uint64() uint64 {
	if d.i+8 > len(d.s) {
		d.bad = true
		return 0
	}
	d.i += 8
	return binary.LittleEndian.Uint64([]byte(d.s[d.i-8 : d.i]))
}

// string returns a substring of the packed configuration, not a copy.
func (d *unpacker) string() string {
	n := d.uvarint()
	if d.bad || n > uint64(len(d.s)-d.i) {
		d.bad = true
		return ""
	}
	d.i += int(n)
	return d.s[d.i-int(n) : d.i]
}
