package sweeper

import (
	"errors"
	"io"
)

// printHTML prints the report as one self-contained HTML page.
func (r *Report) printHTML(io.Writer) error {
	return errors.New("-o html is not built yet")
}
