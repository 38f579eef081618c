package store

import (
	"io/fs"
	"strings"
)

// mustSub narrows an embedded FS to one of its folders; the folder is part
// of the binary, so a failure is a build mistake.
func mustSub(f fs.FS, dir string) fs.FS {
	sub, err := fs.Sub(f, dir)
	if err != nil {
		panic(err)
	}
	return sub
}

// prefixed qualifies every column of a comma-separated list.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ", ")
	for i, c := range parts {
		parts[i] = prefix + c
	}
	return strings.Join(parts, ", ")
}
