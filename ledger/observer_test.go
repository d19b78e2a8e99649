package ledger_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/idemledger/idemledger/ledger"
)

func TestEventKindString(t *testing.T) {
	want := map[ledger.EventKind]string{
		0: "unknown", ledger.EventClaimed: "claimed", ledger.EventReplayed: "replayed",
		ledger.EventInFlight: "in_flight", ledger.EventKeyReused: "key_reused",
		ledger.EventStored: "stored", ledger.EventReleased: "released",
		ledger.EventLeaseLost: "lease_lost", ledger.EventStoreBusy: "store_busy",
		ledger.EventStoreUnavailable: "store_unavailable", 200: "unknown",
	}
	for k, w := range want {
		if got := k.String(); got != w {
			t.Errorf("EventKind(%d).String() = %q, want %q", k, got, w)
		}
	}
}

// TestLogObserver: each kind at its level, with exactly the attributes
// that are set, in a fixed order.
func TestLogObserver(t *testing.T) {
	var buf bytes.Buffer
	h := slog.NewTextHandler(&buf, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})
	o := ledger.LogObserver(slog.New(h))
	ctx := context.Background()
	events := []ledger.Event{
		{Kind: ledger.EventClaimed, Method: "POST", Route: "POST /payments", Duration: time.Millisecond},
		{Kind: ledger.EventStored, Method: "POST", Route: "POST /payments", Status: 201, Duration: 3 * time.Millisecond},
		{Kind: ledger.EventReplayed, Method: "POST", Route: "/payments", Status: 201},
		{Kind: ledger.EventInFlight, Method: "POST", Route: "/payments", Status: 409},
		{Kind: ledger.EventKeyReused, Method: "POST", Route: "/payments", Status: 422},
		{Kind: ledger.EventReleased, Reason: ledger.ReasonPanic, Method: "POST", Route: "/payments", Status: 500},
		{Kind: ledger.EventStoreBusy, Op: "claim", Method: "POST", Route: "/payments", Status: 503, Err: errors.New("database is locked")},
		{Kind: ledger.EventStoreUnavailable, Op: "complete", Method: "/pay.V1/Charge", Route: "/pay.V1/Charge", Err: errors.New("connection refused")},
		{Kind: ledger.EventLeaseLost, Op: "extend", Method: "POST", Route: "/payments", Err: ledger.ErrLeaseLost},
	}
	for _, e := range events {
		o.Observe(ctx, e)
	}
	want := `level=DEBUG msg="idempotency: claimed" method=POST route="POST /payments" duration=1ms
level=DEBUG msg="idempotency: stored" method=POST route="POST /payments" status=201 duration=3ms
level=INFO msg="idempotency: replayed" method=POST route=/payments status=201 duration=0s
level=INFO msg="idempotency: in_flight" method=POST route=/payments status=409 duration=0s
level=WARN msg="idempotency: key_reused" method=POST route=/payments status=422 duration=0s
level=WARN msg="idempotency: released" method=POST route=/payments status=500 reason=panic duration=0s
level=WARN msg="idempotency: store_busy" method=POST route=/payments status=503 op=claim duration=0s error="database is locked"
level=ERROR msg="idempotency: store_unavailable" method=/pay.V1/Charge route=/pay.V1/Charge op=complete duration=0s error="connection refused"
level=ERROR msg="idempotency: lease_lost" method=POST route=/payments op=extend duration=0s error="` + ledger.ErrLeaseLost.Error() + `"
`
	if got := buf.String(); got != want {
		t.Errorf("log:\n%s\nwant:\n%s", got, want)
	}

	// Below the handler's level nothing is written.
	buf.Reset()
	quiet := ledger.LogObserver(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	quiet.Observe(ctx, events[0])
	quiet.Observe(ctx, events[2])
	if buf.Len() != 0 {
		t.Errorf("Info and Debug events written at Warn: %q", buf.String())
	}
}

func TestObservers(t *testing.T) {
	var got []string
	rec := func(name string) ledger.Observer {
		return ledger.ObserverFunc(func(_ context.Context, e ledger.Event) {
			got = append(got, name+":"+e.Kind.String())
		})
	}
	o := ledger.Observers(rec("a"), nil, rec("b"))
	o.Observe(context.Background(), ledger.Event{Kind: ledger.EventReplayed})
	o.Observe(context.Background(), ledger.Event{Kind: ledger.EventStored})
	if s := strings.Join(got, " "); s != "a:replayed b:replayed a:stored b:stored" {
		t.Errorf("Observers delivered %q", s)
	}
	ledger.Observers().Observe(context.Background(), ledger.Event{Kind: ledger.EventClaimed}) // no observer: no panic
}
