package sweeper

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// progress is the one-line progress display of the observe stage on a terminal:
// "observe: 12/75 lists, 3456 objects", redrawn in place, erased when done.
type progress struct {
	w              io.Writer // nil: no display
	total          int
	lists, objects atomic.Int64
}

func newProgress(w io.Writer, total int) *progress {
	return &progress{w: w, total: total}
}

// done counts a finished list.
func (p *progress) done(objects int) {
	p.lists.Add(1)
	p.objects.Add(int64(objects))
}

// show redraws the line until the returned stop is called, which erases it.
func (p *progress) show(ctx context.Context) (stop func()) {
	if p.w == nil {
		return func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(200 * time.Millisecond)
		defer ticker.Stop()
		for {
			fmt.Fprintf(p.w, "\r\x1b[Kobserve: %d/%d lists, %d objects", p.lists.Load(), p.total, p.objects.Load())
			select {
			case <-ctx.Done():
				fmt.Fprint(p.w, "\r\x1b[K")
				return
			case <-ticker.C:
			}
		}
	})
	return func() {
		cancel()
		wg.Wait()
	}
}
