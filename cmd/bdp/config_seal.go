package main

import (
	"errors"
	"strconv"
	"time"

	"github.com/openbdp/bdp/store/sealer"
)

// sealVars are the variables of compact storage (README: Compact storage
// of closed weeks).
var sealVars = []configVar{
	{"BDP_SEAL_GRACE", sealer.DefaultGrace.String(), "how long after a week (Monday 00:00 UTC) ends its observations are sealed into compressed chunks; late writes until then stay rows (later ones too, until the next pass seals them); \"off\": nothing is sealed"},
	{"BDP_SEAL_DUTY", strconv.FormatFloat(sealer.DefaultDuty, 'g', -1, 64), "the share of time the sealer works, over 0 to 1: it pauses after each batch, so ingestion keeps its pace"},
}

// loadSealConfig reads the sealing variables; Seal stays nil with
// BDP_SEAL_GRACE=off.
func loadSealConfig(c *config, get func(string) string, bad func(string, error)) {
	grace := get("BDP_SEAL_GRACE")
	if grace == "off" {
		return
	}
	cfg := sealer.Config{}
	d, err := time.ParseDuration(grace)
	if err != nil || d < time.Minute {
		bad("BDP_SEAL_GRACE", errors.New("must be a duration such as 72h, at least 1m, or off"))
	}
	cfg.Grace = d
	if cfg.Duty, err = strconv.ParseFloat(get("BDP_SEAL_DUTY"), 64); err != nil || !(cfg.Duty > 0 && cfg.Duty <= 1) {
		bad("BDP_SEAL_DUTY", errors.New("must be a number over 0 and at most 1, such as 0.1"))
	}
	c.Seal = &cfg
}
