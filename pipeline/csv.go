package pipeline

import (
	"io"

	"github.com/openbdp/bdp/codec"
)

// CSVReader is the CSV import's source: codec's reader of the file (its
// dialect, fields and timestamps, api.md 4.7), each line's observation
// made one of the project imported into.
type CSVReader struct {
	r         *codec.CSVReader
	projectID int64
}

// NewCSVReader detects the dialect from the beginning of r (reading up to
// 64 KiB) and returns a reader of its observations for project projectID.
// Only a read error fails it; a file of garbage still gets a dialect and
// fails line by line.
func NewCSVReader(r io.Reader, projectID int64) (*CSVReader, error) {
	cr, err := codec.NewCSVReader(r)
	if err != nil {
		return nil, err
	}
	return &CSVReader{r: cr, projectID: projectID}, nil
}

// Next returns the next observation and its line number. A failing line
// answers a *codec.LineError (call Next again for the following lines);
// the end of the file answers io.EOF; any other error is the reader's and
// final.
func (r *CSVReader) Next() (Observation, int, error) {
	o, line, err := r.r.Next()
	if err != nil {
		return Observation{}, line, err
	}
	return Observation{ProjectID: r.projectID, DataPointID: o.DataPointID, Time: o.Time, Value: o.Value}, line, nil
}
