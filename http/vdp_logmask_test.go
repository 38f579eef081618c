package http

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/openbdp/bdp/actors"
	"github.com/openbdp/bdp/store"
)

// Log messages name the datapoints they are about; shown to a caller who
// may not read one (TagAuths), its dataPointID reads (hidden), in the
// virtual datapoint's logs and in the alerts alike. The setup of
// vdp_access_test.go: the user reads nosrc and src_ok, not src_hidden
// (nosrc's source) nor old_hidden (a datapoint a log names that is no
// source any more).
func TestVDPLogsMaskHiddenSources(t *testing.T) {
	e, c, pid, u := vdpAccessSetup(t)
	ctx := context.Background()
	e.do("PUT", "/operator/projects/"+itoa(pid)+"/datapoints/old_hidden/tags", bearer(testOperatorToken),
		[]map[string]any{{"key": "units", "value": "degC"}}).want(t, 200)
	// What the engine writes: a failed start (as resume writes it) and a
	// calculation error (through the engine's own OnCalcError).
	if _, err := e.store.ChangeVDPStatus(ctx, pid, "nosrc", store.StatusChange{Code: store.StatusStartFailed,
		Message: "resume after a restart: history of old_hidden: gone; src_ok and nosrc fine"}); err != nil {
		t.Fatal(err)
	}
	actors.LogCalcErrors(e.store, slog.New(slog.NewTextHandler(io.Discard, nil)))(
		actors.Key{ProjectID: pid, DataPointID: "nosrc"}, errors.New("read src_hidden: no value"))

	const (
		startShown  = "resume after a restart: history of old_hidden: gone; src_ok and nosrc fine"
		startMasked = "resume after a restart: history of (hidden): gone; src_ok and nosrc fine"
		calcShown   = "calculation emitted nothing: read src_hidden: no value"
		calcMasked  = "calculation emitted nothing: read (hidden): no value"
	)
	// The user may also list the alerts, with the same TagAuths.
	alertsRole := rbCreateProjectRole(e, c.Admin, pid, []int32{e.endpointID("GET", "/v2/project/{project_id}/alerts")},
		rbTag("name", "nosrc", true, false), rbTag("name", "src_ok", true, false))
	rbAssignProjectRole(e, c.Admin, pid, alertsRole, num(t, e.do("GET", "/v2/user", u, nil).want(t, 200).JSON, "user.id"))

	logs := func(t *testing.T, as cred) []string {
		var out []string
		for _, l := range e.do("GET", vdpPath(pid, "", "dataPointID", "nosrc"), as, nil).want(t, 200).JSON["logs"].([]any) {
			out = append(out, l.(map[string]any)["message"].(string))
		}
		return out
	}
	alerts := func(t *testing.T, as cred) []string {
		var out []string
		for _, a := range e.do("GET", "/v2/project/"+itoa(pid)+"/alerts", as, nil).want(t, 200).JSON["items"].([]any) {
			out = append(out, a.(map[string]any)["message"].(string))
		}
		return out
	}
	for _, tt := range []struct {
		name   string
		got    func(*testing.T, cred) []string
		as     cred
		want   []string
		absent []string
	}{
		{"logs, restricted user", logs, u, []string{startMasked, calcMasked}, []string{"src_hidden", "old_hidden"}},
		{"alerts, restricted user", alerts, u, []string{startMasked, calcMasked}, []string{"src_hidden", "old_hidden"}},
		{"logs, company admin", logs, c.Admin, []string{startShown, calcShown}, nil},
		{"alerts, company admin", alerts, c.Admin, []string{startShown, calcShown}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.got(t, tt.as)
			all := strings.Join(got, "\n")
			for _, w := range tt.want {
				if !strings.Contains(all, w) {
					t.Errorf("no message %q among:\n%s", w, all)
				}
			}
			for _, a := range tt.absent {
				if strings.Contains(all, a) {
					t.Errorf("the messages name %s:\n%s", a, all)
				}
			}
		})
	}
}
