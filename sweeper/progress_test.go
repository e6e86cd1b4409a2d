package sweeper

import (
	"bytes"
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestProgress(t *testing.T) {
	var out lockedBuffer
	p := newProgress(&out, 3)
	stop := p.show(context.Background())
	p.done(10)
	p.done(5)
	require.Eventually(t, func() bool { return strings.Contains(out.String(), "observe: 2/3 lists, 15 objects") }, 2*time.Second, 10*time.Millisecond)
	stop()
	assert.True(t, strings.HasSuffix(out.String(), "\r\x1b[K"), "the line is erased when done")

	silent := newProgress(nil, 3)
	silent.show(context.Background())() // no writer: nothing runs, nothing panics
}

// lockedBuffer is a bytes.Buffer safe for the progress goroutine and the test.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
