package http

import (
	"bytes"
	"context"
	"encoding/json"
	"strconv"

	"github.com/gofiber/fiber/v2"

	"github.com/openbdp/bdp/codec"
	"github.com/openbdp/bdp/fault"
	"github.com/openbdp/bdp/pipeline"
	"github.com/openbdp/bdp/rbac"
	"github.com/openbdp/bdp/store"
)

// uploadBody is POST /v2/project/{project_id}/timeseries: dataPointID to
// its observations.
type uploadBody map[string][]uploadPoint

type uploadPoint struct {
	Time  string          `json:"time" required:"true" doc:"RFC 3339"`
	Value json.RawMessage `json:"value" required:"true" doc:"a finite number"`
}

// uploadTimeseries stores every observation of the body or none: any bad
// value or time answers 400 naming the datapoint and index.
func (s *Server) uploadTimeseries(c *fiber.Ctx, cl *call) (any, error) {
	body := bytes.TrimSpace(c.Body())
	if len(body) == 0 || body[0] != '{' {
		return nil, fault.Invalidf("the body must be a JSON object mapping dataPointID to an array of {time, value}")
	}
	names, scanned := checkUpload(cl.ProjectID, body)
	if !scanned {
		obs, names, err := decodeUpload(cl.ProjectID, body)
		if err != nil {
			return nil, err
		}
		if err := s.requireDatapointAccess(c, cl, names, true); err != nil {
			return nil, err
		}
		return ok("", nil), s.ingest.Write(c.UserContext(), pipeline.SourceHTTP, obs)
	}
	if err := s.requireDatapointAccess(c, cl, names, true); err != nil {
		return nil, err
	}
	if err := s.writeUpload(c.UserContext(), cl.ProjectID, body); err != nil {
		return nil, err
	}
	return ok("", nil), nil
}

// uploadChunk is how many observations of a checked upload are built and
// written at a time: the body is read twice (checked whole, then written
// in chunks) rather than held beside all of its observations, which took
// a 32 MiB upload to five times its size in memory.
const uploadChunk = 100_000

// checkUpload validates an upload of the common form with
// codec.ScanUpload, which holds no copy of the body, and returns its
// datapoints; false sends it to decodeUpload, which also gives the reason
// for anything invalid.
func checkUpload(projectID int64, body []byte) (names []string, ok bool) {
	valid, dp := true, ""
	ok = codec.ScanUpload(body, func(id string) {
		dp = id
		names = append(names, id)
		valid = valid && codec.ValidateDataPointID(id) == nil
	}, func(tv codec.TimeValue) {
		o := pipeline.Observation{ProjectID: projectID, DataPointID: dp, Time: tv.Time, Value: tv.Value}
		valid = valid && o.Validate() == nil
	})
	return names, ok && valid
}

// writeUpload writes a checked upload, uploadChunk observations at a time.
func (s *Server) writeUpload(ctx context.Context, projectID int64, body []byte) error {
	size := min(uploadChunk, bytes.Count(body, []byte{'}'}))
	chunk := make([]pipeline.Observation, 0, size)
	var err error
	dp := ""
	codec.ScanUpload(body, func(id string) { dp = id }, func(tv codec.TimeValue) {
		if err != nil {
			return
		}
		chunk = append(chunk, pipeline.Observation{ProjectID: projectID, DataPointID: dp, Time: tv.Time, Value: tv.Value})
		if len(chunk) == cap(chunk) {
			err = s.ingest.Write(ctx, pipeline.SourceHTTP, chunk)
			// A new slice: the pipeline may still route the written one.
			chunk = make([]pipeline.Observation, 0, size)
		}
	})
	if err == nil && len(chunk) > 0 {
		err = s.ingest.Write(ctx, pipeline.SourceHTTP, chunk)
	}
	return err
}

// decodeUpload decodes an upload with encoding/json, naming the datapoint
// and index of the first bad value or time.
func decodeUpload(projectID int64, body []byte) ([]pipeline.Observation, []string, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		return nil, nil, decodeError(err)
	}
	obs := make([]pipeline.Observation, 0, len(body)/40)
	names := make([]string, 0, len(raw))
	for dp, points := range raw {
		if err := codec.ValidateDataPointID(dp); err != nil {
			return nil, nil, fault.Invalidf("%s", err.Error())
		}
		names = append(names, dp)
		var err error
		if obs, err = appendPoints(obs, projectID, dp, points); err != nil {
			return nil, nil, err
		}
	}
	return obs, names, nil
}

// appendPoints decodes one datapoint's array and validates every point.
func appendPoints(obs []pipeline.Observation, projectID int64, dp string, raw json.RawMessage) ([]pipeline.Observation, error) {
	var points []json.RawMessage
	if err := json.Unmarshal(raw, &points); err != nil || points == nil { // null is no array
		return nil, fault.Invalidf("datapoint %q: expected an array of {time, value}", dp)
	}
	for i, p := range points {
		var pt uploadPoint
		if err := json.Unmarshal(p, &pt); err != nil {
			return nil, fault.Invalidf("datapoint %q, index %d: expected an object {time, value}", dp, i)
		}
		t, err := codec.ParseRFC3339(pt.Time)
		if err != nil {
			return nil, fault.Invalidf("datapoint %q, index %d: time %q is not RFC 3339", dp, i, pt.Time)
		}
		v, err := parseNumber(pt.Value)
		if err != nil {
			return nil, fault.Invalidf("datapoint %q, index %d: value %s is not a finite number", dp, i, string(pt.Value))
		}
		o := pipeline.Observation{ProjectID: projectID, DataPointID: dp, Time: t, Value: v}
		if err := o.Validate(); err != nil {
			return nil, fault.Invalidf("datapoint %q, index %d: %s", dp, i, err.Error())
		}
		obs = append(obs, o)
	}
	return obs, nil
}

// parseNumber accepts a JSON number only: not a string, not null.
func parseNumber(raw json.RawMessage) (float64, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] == '"' || raw[0] == 'n' || raw[0] == 't' || raw[0] == 'f' || raw[0] == '[' || raw[0] == '{' {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseFloat(string(raw), 64)
}

// requireDatapointAccess checks the caller's TagAuths on every named
// datapoint (write or read); the first one without access answers 403.
func (s *Server) requireDatapointAccess(c *fiber.Ctx, cl *call, names []string, write bool) error {
	if cl.Perms.HasCompanyRole() {
		return nil
	}
	access, err := s.datapointAccess(c.UserContext(), cl, names)
	if err != nil {
		return err
	}
	for _, n := range names {
		if write && !access[n].Write {
			return fault.Forbiddenf("no write access to datapoint %q", n)
		}
		if !write && !access[n].Read {
			return fault.Forbiddenf("no read access to datapoint %q", n)
		}
	}
	return nil
}

// datapointAccess judges the caller's access to each named datapoint of
// the call's project, with one query for the tags TagAuths may look at.
// A name not stored yet is judged by its name alone: the write that
// creates it has no tags.
func (s *Server) datapointAccess(ctx context.Context, cl *call, names []string) (map[string]rbac.Access, error) {
	stored, err := s.store.ProjectDatapoints(ctx, cl.ProjectID, names)
	if err != nil {
		return nil, err
	}
	tags := make(map[string][]store.DatapointTag, len(stored))
	for _, d := range stored {
		tags[d.ID] = d.Tags
	}
	out := make(map[string]rbac.Access, len(names))
	for _, n := range names {
		out[n] = cl.Perms.DatapointAccess(cl.ProjectID, rbac.Datapoint{ID: n, Tags: tags[n]})
	}
	return out, nil
}
