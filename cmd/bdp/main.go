// Command bdp is the building data platform: `bdp serve` runs all of it in
// one process.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "dev"

const usage = `bdp, the open building data platform

Usage:
  bdp serve     run the platform (HTTP API, managed PostgreSQL unless BDP_DATABASE_URL is set)
  bdp migrate   apply database migrations and exit
  bdp admin     create-company --name NAME --admin-email EMAIL | reset-password --email EMAIL
                (on the database of bdp serve, running or not; bdp admin help for more)
  bdp edge-sim  -broker tcp://host:port -project N: a simulated edge device (bdp edge-sim -h for more)
  bdp version   print the version

Configuration comes from the environment:
`

func main() {
	if len(os.Args) < 2 {
		printUsage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var err error
	switch os.Args[1] {
	case "serve":
		err = runServe(ctx)
	case "migrate":
		err = runMigrate(ctx)
	case "admin":
		err = runAdmin(ctx, os.Args[2:], os.Stdin, os.Stdout)
	case "edge-sim":
		err = runEdgeSim(ctx, os.Args[2:], os.Getenv, os.Stderr)
	case "version":
		fmt.Println("bdp", version)
	case "help", "-h", "--help":
		printUsage()
	default:
		fmt.Fprintf(os.Stderr, "bdp: unknown command %q\n\n", os.Args[1])
		printUsage()
		os.Exit(2)
	}
	var usage usageError
	if errors.As(err, &usage) {
		fmt.Fprintf(os.Stderr, "bdp %s: %s\n", os.Args[1], usage.msg)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bdp:", err)
		os.Exit(1)
	}
}

func printUsage() {
	fmt.Fprint(os.Stderr, usage)
	for _, v := range configVars {
		fmt.Fprintf(os.Stderr, "  %-26s %s (default %q)\n", v.name, v.doc, v.def)
	}
}
