// Package relaypb is the generated protobuf code of relay.proto, the wire
// format of the relay of stored observations between a cluster's nodes.
// Use it through package codec/relay, which checks and converts it.
package relaypb

//go:generate protoc --proto_path=. --go_out=. --go_opt=paths=source_relative relay.proto
