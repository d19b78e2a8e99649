package connectexample_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/examples/internal/testledger"
	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/internal/testdb"
)

// outcome is what a Connect client saw of one call.
type outcome struct {
	charge   string
	code     connect.Code // 0 for success
	replayed string
}

func callCharge(t *testing.T, client *connect.Client[structpb.Struct, structpb.Struct], key string, amount float64) outcome {
	t.Helper()
	msg, err := structpb.NewStruct(map[string]any{"amount": amount})
	if err != nil {
		t.Fatal(err)
	}
	req := connect.NewRequest(msg)
	if key != "" {
		req.Header().Set("Idempotency-Key", key)
	}
	resp, err := client.CallUnary(context.Background(), req)
	if err != nil {
		var ce *connect.Error
		replayed := ""
		if errorAs(err, &ce) {
			replayed = ce.Meta().Get(idemhttp.DefaultReplayHeader)
		}
		return outcome{code: connect.CodeOf(err), replayed: replayed}
	}
	return outcome{charge: resp.Msg.Fields["charge"].GetStringValue(), replayed: resp.Header().Get(idemhttp.DefaultReplayHeader)}
}

func tenant(*http.Request) (string, error) { return "tenant-1", nil }

// TestConnectReplay: a Connect unary procedure behind the middleware runs
// once per key; the retry gets the same message, or the same Connect
// error, marked as replayed.
func TestConnectReplay(t *testing.T) {
	testledger.Each(t, func(t *testing.T, engine string) {
		runs := 0
		mw := testledger.Middleware(t, engine, idemhttp.Options{Scope: tenant, Refuse: connectRefuse})
		srv := httptest.NewServer(mw(chargeHandler(&runs)))
		defer srv.Close()
		client := connect.NewClient[structpb.Struct, structpb.Struct](http.DefaultClient, srv.URL+chargeProcedure)
		steps := []struct {
			key    string
			amount float64
			want   outcome
			runs   int
		}{
			{"k1", 5, outcome{charge: "ch_1"}, 1},
			{"k1", 5, outcome{charge: "ch_1", replayed: "true"}, 1},
			{"k1", 6, outcome{code: connect.CodeFailedPrecondition}, 1},
			{"k2", -1, outcome{code: connect.CodeInvalidArgument}, 2},
			{"k2", -1, outcome{code: connect.CodeInvalidArgument, replayed: "true"}, 2},
			{"", 5, outcome{charge: "ch_3"}, 3}, // no key: unprotected
		}
		for i, s := range steps {
			if got := callCharge(t, client, s.key, s.amount); got != s.want {
				t.Errorf("step %d: %+v, want %+v", i+1, got, s.want)
			}
			if runs != s.runs {
				t.Errorf("step %d: %d runs, want %d", i+1, runs, s.runs)
			}
		}
	})
}

// TestConnectRefusals: what a Connect client sees of each refusal, with
// idemhttp's default problem documents and with connectRefuse.
func TestConnectRefusals(t *testing.T) {
	tests := []struct {
		name         string
		make         func(t *testing.T, c *connect.Client[structpb.Struct, structpb.Struct], release chan struct{}) outcome
		dflt, custom connect.Code
	}{
		{"key missing", func(t *testing.T, c *connect.Client[structpb.Struct, structpb.Struct], _ chan struct{}) outcome {
			return callCharge(t, c, "", 5)
		}, connect.CodeInternal, connect.CodeInvalidArgument},
		{"key reused", func(t *testing.T, c *connect.Client[structpb.Struct, structpb.Struct], _ chan struct{}) outcome {
			callCharge(t, c, "k", 5)
			return callCharge(t, c, "k", 6)
		}, connect.CodeUnknown, connect.CodeFailedPrecondition},
		{"in flight", func(t *testing.T, c *connect.Client[structpb.Struct, structpb.Struct], release chan struct{}) outcome {
			// The first call holds the key until this duplicate is answered.
			return callCharge(t, c, "k", 5)
		}, connect.CodeUnknown, connect.CodeUnavailable},
	}
	testledger.Each(t, func(t *testing.T, engine string) {
		for _, tt := range tests {
			for _, custom := range []bool{false, true} {
				name := tt.name + map[bool]string{false: "/default", true: "/connectRefuse"}[custom]
				t.Run(name, func(t *testing.T) {
					opts := idemhttp.Options{Scope: tenant, Required: true}
					if custom {
						opts.Refuse = connectRefuse
					}
					mw := testledger.Middleware(t, engine, opts)
					started, finish := make(chan struct{}), make(chan struct{})
					runs := 0
					h := chargeHandler(&runs)
					blocking := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						select {
						case <-started: // not the blocking kind of test
						default:
							if tt.name == "in flight" {
								close(started)
								<-finish
							}
						}
						h.ServeHTTP(w, r)
					})
					srv := httptest.NewServer(mw(blocking))
					defer srv.Close()
					client := connect.NewClient[structpb.Struct, structpb.Struct](http.DefaultClient, srv.URL+chargeProcedure)
					release := make(chan struct{}, 1)
					done := make(chan outcome, 1)
					if tt.name == "in flight" {
						go func() { done <- callCharge(t, client, "k", 5) }()
						<-started
					}
					got := tt.make(t, client, release)
					close(finish)
					if tt.name == "in flight" {
						<-done
					}
					want := tt.dflt
					if custom {
						want = tt.custom
					}
					if got.code != want {
						t.Errorf("code %v, want %v", got.code, want)
					}
				})
			}
		}
	})
}

// TestConnectStoreUnavailable: a closed store answers 503, which a Connect
// client reads as unavailable with either refusal writer.
func TestConnectStoreUnavailable(t *testing.T) {
	for _, refuse := range []idemhttp.RefuseFunc{nil, connectRefuse} {
		db := testdb.SQLitePool(t)
		mw := testledger.MiddlewareOn(t, db, idemhttp.Options{Scope: tenant, Refuse: refuse})
		runs := 0
		srv := httptest.NewServer(mw(chargeHandler(&runs)))
		defer srv.Close()
		db.Close()
		client := connect.NewClient[structpb.Struct, structpb.Struct](http.DefaultClient, srv.URL+chargeProcedure)
		if got := callCharge(t, client, "k", 5); got.code != connect.CodeUnavailable || runs != 0 {
			t.Errorf("closed store: %+v, %d runs; want unavailable and no run", got, runs)
		}
	}
}

// TestConnectCompressedReplay: Connect gzips its answers, and the replay
// carries the stored Content-Encoding (in idemhttp.DefaultReplayHeaders),
// so the client reads the replayed message as it read the first.
func TestConnectCompressedReplay(t *testing.T) {
	testledger.Each(t, func(t *testing.T, engine string) {
		mw := testledger.Middleware(t, engine, idemhttp.Options{Scope: tenant})
		runs := 0
		srv := httptest.NewServer(mw(chargeHandler(&runs)))
		defer srv.Close()
		client := connect.NewClient[structpb.Struct, structpb.Struct](http.DefaultClient, srv.URL+chargeProcedure)
		first := callCharge(t, client, "k", 5)
		again := callCharge(t, client, "k", 5)
		if want := (outcome{charge: "ch_1", replayed: "true"}); first != (outcome{charge: "ch_1"}) || again != want || runs != 1 {
			t.Errorf("first %+v, replay %+v after %d runs; want the charge, then %+v, 1 run", first, again, runs, want)
		}
	})
}

// TestConnectGRPCProtocolNotStored: a gRPC-protocol call to the same
// handler carries its status in trailers, which idemhttp never stores:
// every retry runs again (serve gRPC clients with package idemgrpc).
func TestConnectGRPCProtocolNotStored(t *testing.T) {
	mw := testledger.Middleware(t, "sqlite", idemhttp.Options{Scope: tenant})
	runs := 0
	srv := httptest.NewUnstartedServer(mw(chargeHandler(&runs)))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()
	client := connect.NewClient[structpb.Struct, structpb.Struct](srv.Client(), srv.URL+chargeProcedure, connect.WithGRPC())
	for i := range 2 {
		if got := callCharge(t, client, "k", 5); got.code != 0 || got.replayed != "" {
			t.Errorf("call %d: %+v, want a fresh answer", i+1, got)
		}
	}
	if runs != 2 {
		t.Errorf("%d runs, want 2", runs)
	}
}
