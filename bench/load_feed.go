package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// A round is every source's next observation, one minute of event time
// after the last round's, each source's on its path (assignPaths). A round
// is acknowledged once every one of its observations is: an HTTP upload
// answered 2xx, a Kafka message whose batch the brokers acknowledged, an
// MQTT publish with its PUBACK.

// feedStall is how long a feed waits for the next round to be
// acknowledged before it gives up.
const feedStall = 2 * time.Minute

// maxRoundsPerUpload bounds what one HTTP upload of FeedRate carries when
// the uploads fall behind the pace and rounds queue up.
const maxRoundsPerUpload = 100

// httpSenders is how many uploads of FeedRate may be under way at once,
// each for its own share of the HTTP sources, as so many gateways.
const httpSenders = 4

// Feed sends rounds every interval until n rounds are acknowledged or ctx
// ends: each round is uploaded (its HTTP sources, through a node at
// random), produced and published, and acknowledged on every path, before
// the next; a steady pace that waits for the deployment, where FeedRate
// keeps a rate.
func (l *Load) Feed(ctx context.Context, n int, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for range n {
		r := l.beginRounds(1)
		if err := l.sendAsync(ctx, r); err != nil {
			return err
		}
		if share := l.onPath[PathHTTP]; len(share) > 0 {
			if err := l.upload(ctx, r, 1, share); err != nil {
				return err
			}
		}
		if err := l.waitAcked(ctx, r+1); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-tick.C:
		}
	}
	return nil
}

// FeedAtOnce uploads the next n rounds as fast as they are answered, by
// workers at once, perUpload rounds in one request: a throughput, where
// Feed is a steady pace. Each worker has its own share of the sources and
// uploads their rounds in order, so every datapoint's observations still
// come in time order. HTTP only.
func (l *Load) FeedAtOnce(ctx context.Context, n, workers, perUpload int) error {
	if len(l.onPath[PathHTTP]) != l.opts.Sources {
		return errors.New("load: FeedAtOnce uploads over HTTP only")
	}
	first := l.beginRounds(n)
	workers = max(1, min(workers, l.opts.Sources))
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		var share []int
		for s := w; s < l.opts.Sources; s += workers {
			share = append(share, s)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := first; r < first+n; r += perUpload {
				if err := l.upload(ctx, r, min(perUpload, first+n-r), share); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	return l.waitAcked(ctx, first+n)
}

// FeedRate sends n rounds at the pace of the rates (LoadOptions.Rates): a
// round every sources/Σrates seconds, handed to every path without
// waiting for the last to be acknowledged, and returns once all are. The
// HTTP sources are shared by httpSenders uploaders, each sending the
// rounds queued for it in one request, in order; Kafka and MQTT keep a
// source's messages in order on their own (a partition, a connection).
func (l *Load) FeedRate(ctx context.Context, n int) error {
	total := 0
	for _, rate := range l.opts.Rates {
		total += rate
	}
	if total <= 0 {
		return errors.New("load: FeedRate needs rates")
	}
	interval := time.Duration(float64(time.Second) * float64(l.opts.Sources) / float64(total))
	queues, stopUploads := l.startUploaders(ctx)
	defer stopUploads()
	l.mu.Lock()
	first := l.dispatched
	l.mu.Unlock()
	began := time.Now()
	for k := range n {
		if err := sleepCtx(ctx, time.Until(began.Add(time.Duration(k)*interval))); err != nil {
			return err
		}
		if err := l.failure(); err != nil {
			return err
		}
		r := l.beginRounds(1)
		if err := l.sendAsync(ctx, r); err != nil {
			return err
		}
		for _, q := range queues {
			select {
			case q <- r:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
	}
	return l.waitAcked(ctx, first+n)
}

// startUploaders starts FeedRate's HTTP uploaders; stop ends them once
// their queues are empty.
func (l *Load) startUploaders(ctx context.Context) (queues []chan int, stop func()) {
	sources := l.onPath[PathHTTP]
	n := min(httpSenders, len(sources))
	var wg sync.WaitGroup
	for w := range n {
		var share []int
		for k := w; k < len(sources); k += n {
			share = append(share, sources[k])
		}
		q := make(chan int, 1<<16)
		queues = append(queues, q)
		wg.Add(1)
		go func() {
			defer wg.Done()
			l.uploadQueued(ctx, q, share)
		}()
	}
	return queues, func() {
		for _, q := range queues {
			close(q)
		}
		wg.Wait()
	}
}

// uploadQueued uploads the rounds queued, consecutive ones, each time
// all that are waiting (up to maxRoundsPerUpload) in one request.
func (l *Load) uploadQueued(ctx context.Context, queue <-chan int, share []int) {
	for r := range queue {
		rounds, open := 1, true
	gather:
		for open && rounds < maxRoundsPerUpload {
			select {
			case _, open = <-queue:
				if open {
					rounds++
				}
			default:
				break gather
			}
		}
		if err := l.upload(ctx, r, rounds, share); err != nil {
			l.fail(err)
			for range queue { // the feed stops at its next round
			}
			return
		}
	}
}

// beginRounds reserves the next n rounds, whose observations are now to
// be acknowledged, and answers the first.
func (l *Load) beginRounds(n int) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.dispatched
	for r := first; r < first+n; r++ {
		l.pending[r] = l.opts.Sources
	}
	l.dispatched += n
	return first
}

// sendAsync hands round r to the Kafka writer and the MQTT publisher.
func (l *Load) sendAsync(ctx context.Context, r int) error {
	if share := l.onPath[PathKafka]; len(share) > 0 {
		if err := l.sendKafka(ctx, r, share); err != nil {
			return err
		}
	}
	if share := l.onPath[PathMQTT]; len(share) > 0 {
		return l.sendMQTT(ctx, r, share)
	}
	return nil
}

// upload sends rounds r to r+rounds-1 of the given sources in one request
// through a node at random; a failed upload is tried again on another
// node: the harness tells acknowledged from lost, not the deployment's
// availability.
func (l *Load) upload(ctx context.Context, r, rounds int, sources []int) error {
	var sb strings.Builder
	sb.WriteString("{")
	for i, s := range sources {
		if i > 0 {
			sb.WriteString(",")
		}
		fmt.Fprintf(&sb, `%q:[`, l.source(s))
		for k := range rounds {
			if k > 0 {
				sb.WriteString(",")
			}
			fmt.Fprintf(&sb, `{"time":%q,"value":%d}`, l.roundTime(r+k).Format(time.RFC3339), l.sourceValue(r+k, s))
		}
		sb.WriteString("]")
	}
	sb.WriteString("}")
	var err error
	for attempt := 0; attempt < 5; attempt++ {
		began := time.Now()
		l.sent(PathHTTP, began)
		if err = l.do(ctx, "POST", fmt.Sprintf("/v2/project/%d/timeseries", l.opts.ProjectID), sb.String(), nil); err == nil {
			l.ack(PathHTTP, time.Since(began), r, rounds, len(sources))
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("upload round %d: %w", r, err)
}

// sent notes a path's first send, where its throughput is counted from.
func (l *Load) sent(p Path, at time.Time) {
	l.mu.Lock()
	if pl := l.paths[p]; pl.first.IsZero() {
		pl.first = at
	}
	l.mu.Unlock()
}

// ack counts perRound observations of each of rounds first.. as
// acknowledged on path p, which took took, and moves the acknowledged
// rounds on.
func (l *Load) ack(p Path, took time.Duration, first, rounds, perRound int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	pl := l.paths[p]
	pl.observations += rounds * perRound
	pl.latencies = append(pl.latencies, took)
	pl.last = time.Now()
	for r := first; r < first+rounds; r++ {
		l.pending[r] -= perRound
	}
	moved := false
	for l.rounds < l.dispatched && l.pending[l.rounds] <= 0 {
		delete(l.pending, l.rounds)
		l.rounds++
		moved = true
	}
	if moved {
		close(l.advanced)
		l.advanced = make(chan struct{})
	}
}

// fail stops the feed: an asynchronous path lost what it sent.
func (l *Load) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = err
		close(l.advanced)
		l.advanced = make(chan struct{})
	}
}

func (l *Load) failure() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// waitAcked waits until the rounds before upTo are acknowledged, a path
// fails, or no round is for feedStall.
func (l *Load) waitAcked(ctx context.Context, upTo int) error {
	for {
		l.mu.Lock()
		rounds, failed, advanced := l.rounds, l.failed, l.advanced
		l.mu.Unlock()
		switch {
		case failed != nil:
			return failed
		case rounds >= upTo:
			return nil
		}
		select {
		case <-advanced:
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(feedStall):
			return fmt.Errorf("load: round %d not acknowledged within %s", rounds, feedStall)
		}
	}
}
