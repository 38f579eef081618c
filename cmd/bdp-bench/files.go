package main

import (
	"context"
	"flag"
	"os"

	"github.com/openbdp/bdp/bench"
)

// filesScenario is `bdp-bench files`: the document store through bdp
// against minio-go straight to the same store (bench/files.go).
func filesScenario() scenario {
	return scenario{
		doc: "document store: 100 MiB upload and download through bdp vs minio-go direct to its store (goals: upload_ratio, download_ratio >= 0.8), RSS growth during a 1 GiB upload (goal <= 32 MiB)",
		run: func(ctx context.Context, args []string) (map[string]any, error) {
			fs := flag.NewFlagSet("files", flag.ContinueOnError)
			o := bench.FilesOptions{Progress: os.Stderr}
			fs.StringVar(&o.Binary, "bdp", "bin/bdp", "path of the bdp binary to measure")
			fs.IntVar(&o.Rounds, "rounds", 5, "measurements of each side, interleaved")
			sizeMiB := fs.Int64("size-mib", 100, "the file of the throughput rounds, MiB")
			largeMiB := fs.Int64("large-mib", 1024, "the upload whose RSS growth is measured, MiB")
			fs.StringVar(&o.Bucket, "bucket", "bdp-files", "the store's bucket (bdp's BDP_S3_BUCKET)")
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			o.SizeBytes, o.LargeBytes = *sizeMiB<<20, *largeMiB<<20
			return bench.Files(ctx, o)
		},
	}
}
