package mqtt

import (
	"testing"
	"time"
)

func TestAccountTopics(t *testing.T) {
	reader := Account{ProjectID: 5}
	writer := Account{ProjectID: 5, Write: true}
	edge := Account{ProjectID: 5, Edge: true}
	cases := []struct {
		acct      Account
		filter    string
		subscribe bool
		publish   bool
	}{
		{reader, "project/5/#", true, false},
		{reader, "project/5/datapoint/a", true, false},
		{reader, "project/5/datapoint/+", true, false},
		{reader, "project/5", true, false},
		{reader, "project/55/#", false, false},
		{reader, "project/+/datapoint/a", false, false},
		{reader, "#", false, false},
		{reader, "project/#", false, false},
		{reader, "edge/5/#", false, false},
		{writer, "project/5/datapoint/a", true, true},
		{writer, "project/6/datapoint/a", false, false},
		{writer, "project/5/", false, false},
		{edge, "edge/5/#", true, false},
		{edge, "edge/5/response", true, true},
		{edge, "project/5/datapoint/a", false, false},
		{edge, "edge/50/response", false, false},
	}
	for _, c := range cases {
		if got := c.acct.MaySubscribe(c.filter); got != c.subscribe {
			t.Errorf("%+v MaySubscribe(%q) = %v", c.acct, c.filter, got)
		}
		if got := c.acct.MayPublish(c.filter); got != c.publish {
			t.Errorf("%+v MayPublish(%q) = %v", c.acct, c.filter, got)
		}
	}
	if reader.TopicFilter() != "project/5/#" || edge.TopicFilter() != "edge/5/#" {
		t.Errorf("filters %q %q", reader.TopicFilter(), edge.TopicFilter())
	}
}

func TestAccountExpired(t *testing.T) {
	now := time.Date(2026, 11, 24, 7, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		until time.Time
		want  bool
	}{{time.Time{}, false}, {now.Add(time.Second), false}, {now, true}, {now.Add(-time.Second), true}} {
		if got := (Account{ValidUntil: c.until}).Expired(now); got != c.want {
			t.Errorf("valid until %v at %v: expired %v", c.until, now, got)
		}
	}
}
