package edge

import (
	"context"
	"errors"
	"time"
)

// Request sends an app operation (app_start, app_stop, app_config) to a
// project's edge device and waits for its answer: until the operation
// time-out (a device offline that long gets nothing) or ctx ends.
// Controls apps register their reset values and alive time-out this way.
func (m *Manager) Request(ctx context.Context, projectID int64, req Request) (Response, error) {
	if req.Reference == "" {
		req.Reference = newReference()
	}
	if err := req.Validate(); err != nil {
		return Response{}, err
	}
	deadline := m.cfg.Now().Add(m.cfg.OperationTimeout)
	events := make(chan event, 2) // requested, then the end: the connection never blocks on it
	if err := m.request(projectID, req, deadline, events); err != nil {
		return Response{}, err
	}
	// The connection fails the request at its deadline; this timer covers
	// a connection that stopped meanwhile.
	timer := time.NewTimer(time.Until(deadline) + 2*m.cfg.Tick)
	defer timer.Stop()
	for {
		select {
		case ev := <-events:
			switch {
			case ev.stage == StateRequested:
				continue
			case ev.resp != nil:
				return *ev.resp, nil
			case ev.err != nil:
				return Response{}, ev.err
			default:
				return Response{}, errors.New(ev.reason)
			}
		case <-timer.C:
			return Response{}, errors.New("no answer from the edge device within " + m.cfg.OperationTimeout.String())
		case <-ctx.Done():
			return Response{}, ctx.Err()
		}
	}
}

// Request is Manager.Request on the connections the setpoints go through.
func (s *Setpoints) Request(ctx context.Context, projectID int64, req Request) (Response, error) {
	return s.m.Request(ctx, projectID, req)
}
