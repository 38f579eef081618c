package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/openbdp/bdp/edge"
)

// stateFile is the device's non-volatile memory on disk (Config.StateFile):
// the app definitions and whether the platform wants each running, so that
// a restart of the process is a reboot of the same device.
type stateFile struct {
	Apps []stateApp `json:"apps"`
}

type stateApp struct {
	App     edge.App `json:"app"`
	Running bool     `json:"running"`
}

// loadState reads path into d; a missing file is an empty memory. It
// reports whether the file held apps that were running.
func (d *device) loadState(path string, now time.Time) (bool, error) {
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	var st stateFile
	if err := json.Unmarshal(raw, &st); err != nil {
		return false, fmt.Errorf("state file %s: %w", path, err)
	}
	if len(st.Apps) > edge.MaxApps {
		return false, fmt.Errorf("state file %s: %d apps, more than %d", path, len(st.Apps), edge.MaxApps)
	}
	anyRunning := false
	for _, a := range st.Apps {
		if err := a.App.Validate(); err != nil {
			return false, fmt.Errorf("state file %s: %w", path, err)
		}
		if err := d.checkApp(a.App); err != nil {
			return false, fmt.Errorf("state file %s: %w", path, err)
		}
		d.saved[a.App.ID] = savedApp{def: a.App, running: a.Running}
		anyRunning = anyRunning || a.Running
	}
	d.logEvent(now, edge.EventCrash, "", "simulator started from its state file "+path)
	return anyRunning, nil
}

// saveState writes the app definitions to path, atomically.
func (d *device) saveState(path string) error {
	st := stateFile{Apps: []stateApp{}}
	for _, id := range slices.Sorted(maps.Keys(d.saved)) {
		st.Apps = append(st.Apps, stateApp{App: d.saved[id].def, Running: d.saved[id].running})
	}
	raw, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, raw, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
