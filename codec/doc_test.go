package codec

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// codec is pure: it imports the standard library only, and fault (itself
// the standard library only: error kinds and the clipping of quoted
// input), so neither pipeline, store nor prometheus can creep in (the
// arrow runs pipeline → codec), and no I/O package beyond io.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	forbidden := []string{"os", "net", "net/http", "database/sql", "log", "log/slog", "os/exec"}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			first, _, _ := strings.Cut(path, "/")
			if path == "github.com/openbdp/bdp/fault" {
				continue
			}
			if strings.Contains(first, ".") || slices.Contains(forbidden, path) {
				t.Errorf("%s imports %s", name, path)
			}
		}
	}
}
