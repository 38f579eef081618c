package chunkenc

import "testing"

// The benchmarks run a week of minute data per kind and report ns and bytes
// per point, the units the goals are in (sealing at least a million
// points per CPU-second; decoding around 15-20 ns per point).
//
//	go test -run '^$' -bench . -benchtime 1s ./store/chunkenc/

func BenchmarkEncode(b *testing.B) {
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			c := newCodec(b)
			pts := k.gen(1)
			var data []byte
			for b.Loop() {
				var err error
				if data, err = c.Encode(data[:0], pts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pts)), "ns/point")
			b.ReportMetric(float64(len(data))/float64(len(pts)), "B/point")
		})
	}
}

func BenchmarkDecode(b *testing.B) {
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			c := newCodec(b)
			pts := k.gen(1)
			data, err := c.Encode(nil, pts)
			if err != nil {
				b.Fatal(err)
			}
			out := make([]Point, 0, len(pts))
			for b.Loop() {
				if out, err = c.Decode(out[:0], data); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(pts)), "ns/point")
			b.ReportMetric(float64(len(data))/float64(len(pts)), "B/point")
		})
	}
}
