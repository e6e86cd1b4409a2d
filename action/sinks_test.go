package action

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/operator-sweeper/operator-sweeper/notify"
	"github.com/operator-sweeper/operator-sweeper/options"
	"github.com/operator-sweeper/operator-sweeper/report"
	"github.com/operator-sweeper/operator-sweeper/report/reporttest"
)

// webhookSecret is the part of a webhook's URL that is its credential: it must never show.
const webhookSecret = "/services/T0000/B0000/XXXXsecretXXXX"

// webhook is a local HTTP server that answers with the next of its statuses (the last one, once
// they run out), and counts what it was sent.
type webhook struct {
	*httptest.Server
	mu       sync.Mutex
	received int
	statuses []int
}

func newWebhook(t *testing.T, statuses ...int) *webhook {
	t.Helper()
	w := &webhook{statuses: statuses}
	w.Server = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		w.mu.Lock()
		w.received++
		status := w.statuses[0]
		if len(w.statuses) > 1 {
			w.statuses = w.statuses[1:]
		}
		w.mu.Unlock()
		rw.WriteHeader(status)
		_, _ = rw.Write([]byte("no_service\n(the webhook is gone)"))
	}))
	t.Cleanup(w.Close)
	return w
}

func (w *webhook) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.received
}

// TestSinksRecordAFailedNotification: a failed notification is logged and recorded in the report,
// fatal only with --require-notify; neither the log nor the report shows the URL.
func TestSinksRecordAFailedNotification(t *testing.T) {
	hook := newWebhook(t, http.StatusInternalServerError, http.StatusInternalServerError, http.StatusOK)
	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := options.Default()
	opts.NotifyURL, opts.NotifyOn = hook.URL+webhookSecret, notify.OnAlways

	r := reporttest.New(time.Now())
	sendToSinks(context.Background(), &opts, r, nil, logger)
	require.Len(t, r.Errors, 1)
	assert.Equal(t, report.StageNotify, r.Errors[0].Stage)
	assert.False(t, r.Errors[0].Fatal)
	assert.False(t, r.Failed(), "a failed notification alone fails nothing")
	assert.Contains(t, logs.String(), "notification not sent")

	sendToSinks(context.Background(), &opts, r, nil, logger) // 200: sent
	require.Len(t, r.Errors, 1)
	assert.Contains(t, logs.String(), `msg="notification sent" url=`+hook.URL+"/… format=json")

	opts.RequireNotify = true
	hook.Close()
	sendToSinks(context.Background(), &opts, r, nil, logger)
	require.Len(t, r.Errors, 2)
	assert.True(t, r.Errors[1].Fatal, "--require-notify")
	assert.True(t, r.Failed())

	var printed bytes.Buffer
	require.NoError(t, r.Print(&printed, report.JSON))
	for _, out := range []string{logs.String(), printed.String()} {
		assert.NotContains(t, out, webhookSecret)
	}
}

// TestNotifiedBeforePrinted: the notification's failure is in the printed report and fails the
// run with --require-notify; a run that is not notified says nothing about it.
func TestNotifiedBeforePrinted(t *testing.T) {
	hook := newWebhook(t, http.StatusNotFound)
	opts := options.Default()
	opts.Output = report.JSON
	opts.NotifyURL, opts.NotifyOn = hook.URL+webhookSecret, notify.OnAlways
	logger := slog.New(slog.DiscardHandler)
	sweep := func() (string, error) {
		var out bytes.Buffer
		r := reporttest.New(time.Now())
		sendToSinks(context.Background(), &opts, r, nil, logger)
		err := finish(opts.OutputOptions, r, &out, r.Print)
		return out.String(), err
	}

	out, err := sweep()
	require.NoError(t, err)
	var printed report.Report
	require.NoError(t, json.Unmarshal([]byte(out), &printed))
	require.Len(t, printed.Errors, 1)
	assert.Equal(t, report.StageNotify, printed.Errors[0].Stage)
	assert.Equal(t, "send the notification to "+hook.URL+"/…: 404 Not Found: no_service (the webhook is gone)", printed.Errors[0].Message)

	opts.RequireNotify = true
	out, err = sweep()
	require.ErrorIs(t, err, ErrIncomplete)
	assert.NotContains(t, err.Error(), webhookSecret)
	assert.Contains(t, out, `"stage": "notify"`, "the report is printed in full")

	opts.NotifyOn = notify.OnActions
	out, err = sweep()
	require.NoError(t, err)
	assert.NotContains(t, out, "notify")
	assert.Equal(t, 2, hook.count(), "a run without actions is not notified")
}
