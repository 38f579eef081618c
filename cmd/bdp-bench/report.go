package main

import (
	"os"

	"github.com/openbdp/bdp/bench"
)

func printJSON(result map[string]any) error { return bench.Report(os.Stdout, result) }
