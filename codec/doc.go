// Package codec holds bdp's wire formats: the bytes that come in (and go
// out) and the values they stand for, nothing more. It reads the CSV
// import (dialect sniffing, fields, the many timestamp forms), RFC 3339
// times as uploads and gateways send them, the Kafka gateway JSON (a
// hand-written fast path and an encoding/json fallback that agree), the
// MQTT topics and payloads, the edge protocol's messages (edge.go,
// decoded member by member in edgedecode.go) and a virtual datapoint's
// configuration (vdpconfig.go), and it holds the rules
// every format shares: what a dataPointID may be and which values and
// times an observation may carry (decisions.md 4). The relay of stored
// observations between a cluster's nodes is protobuf, in codec/relay
// (with its generated codec/relaypb), a package of its own so that codec
// stays on the standard library.
//
// What belongs here: pure functions and small readers over []byte and
// io.Reader, each format in a small file with its tests and a fuzz test.
// What does not: I/O beyond io.Reader, goroutines, clocks, metrics,
// storage, access rules, and the pipeline's types. Package pipeline (the
// stages: batcher, flush, router, the Kafka consumer) and http's CSV
// import use codec and turn its values into pipeline.Observation; codec
// imports no other bdp package (TestImportsOnlyTheStandardLibrary), so
// never pipeline, store or prometheus.
package codec
