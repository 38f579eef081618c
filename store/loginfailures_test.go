package store

import (
	"context"
	"strings"
	"testing"
	"time"
)

// A payload published through one process arrives unchanged at another
// on the same database (two Stores: two pools, as two nodes), once LISTEN
// is in effect; an oversized payload is refused without being sent.
func TestLoginFailuresReachTheOtherProcesses(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	url := testCluster.TestDatabase(t)
	publisher, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(publisher.Close)
	listener, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(listener.Close)

	listening, payloads := make(chan bool, 1), make(chan string, 16)
	done := make(chan struct{})
	go func() {
		defer close(done)
		listener.ListenLoginFailures(ctx, func(again bool) { listening <- again }, func(p string) { payloads <- p })
	}()
	t.Cleanup(func() { cancel(); <-done })
	select {
	case again := <-listening:
		if again {
			t.Fatal("the first LISTEN is told as a reconnection")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("LISTEN never took effect")
	}

	tests := []struct {
		name    string
		payload string
		refused bool
	}{
		{"json", `{"p":"a1","a":"ada@acme.test","ip":"10.0.0.1"}`, false},
		{"escaped NUL and non-ASCII", `{"a":"mqtt\u0000édge"}`, false},
		{"the longest", strings.Repeat("x", MaxLoginFailurePayload), false},
		{"too long", strings.Repeat("x", MaxLoginFailurePayload+1), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := publisher.PublishLoginFailure(ctx, tt.payload)
			if tt.refused {
				if err == nil {
					t.Fatal("published")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			select {
			case got := <-payloads:
				if got != tt.payload {
					t.Fatalf("got %q, want %q", got, tt.payload)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("never arrived")
			}
		})
	}
	// The refused payload was not sent: a marker after it comes next.
	if err := publisher.PublishLoginFailure(ctx, "marker"); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-payloads:
		if got != "marker" {
			t.Fatalf("got %.20q…, want the marker", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the marker never arrived")
	}
}
