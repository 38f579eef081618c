package edge

import "testing"

// The messages' decoders are codec's, tested there (codec/edge_test.go);
// schema_test.go, doc_test.go and fuzz_test.go hold them to the published
// schemas.

func TestTopics(t *testing.T) {
	for got, want := range map[string]string{
		RequestTopic(7):  "edge/7/request",
		ResponseTopic(7): "edge/7/response",
		AliveTopic(7):    "edge/7/alive",
		DataTopic(7):     "edge/7/data",
	} {
		if got != want {
			t.Errorf("topic %q, want %q", got, want)
		}
	}
}
