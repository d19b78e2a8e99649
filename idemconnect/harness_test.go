package idemconnect_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemconnect"
	"github.com/idemledger/idemledger/internal/testdb"
	"github.com/idemledger/idemledger/ledger"
)

const chargeProcedure = "/pay.v1.Payments/Charge"

// eachDriver runs f with a fresh ledger (opts) on every driver.
func eachDriver(t *testing.T, opts ledger.Options, f func(t *testing.T, l idemconnect.Ledger)) {
	testdb.Each(t,
		func(t *testing.T, d *testdb.DB[*sql.Tx]) { f(t, ledgerOn(t, d, opts)) },
		func(t *testing.T, d *testdb.DB[pgx.Tx]) { f(t, ledgerOn(t, d, opts)) })
}

func ledgerOn[TTx any](t *testing.T, d *testdb.DB[TTx], opts ledger.Options) *ledger.Ledger[TTx] {
	t.Helper()
	l, err := ledger.New(d.Driver, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	return l
}

// protocols are the three a connect-go handler serves, as client options.
var protocols = []struct {
	name string
	opt  []connect.ClientOption
}{
	{"connect", nil},
	{"grpc", []connect.ClientOption{connect.WithGRPC()}},
	{"grpcweb", []connect.ClientOption{connect.WithGRPCWeb()}},
}

// payments is the procedure under test: it counts its runs, waits delay,
// and answers with a charge id and every field it got, or with handle's
// answer when handle is set.
type payments struct {
	runs   atomic.Int64
	delay  time.Duration
	handle func(ctx context.Context, in *structpb.Struct) (*structpb.Struct, error)
}

func (p *payments) charge(ctx context.Context, req *connect.Request[structpb.Struct]) (*connect.Response[structpb.Struct], error) {
	n := p.runs.Add(1)
	time.Sleep(p.delay)
	if p.handle != nil {
		out, err := p.handle(ctx, req.Msg)
		if err != nil {
			return nil, err
		}
		return connect.NewResponse(out), nil
	}
	out := &structpb.Struct{Fields: map[string]*structpb.Value{"charge": structpb.NewStringValue(fmt.Sprintf("ch_%d", n))}}
	for k, v := range req.Msg.Fields {
		out.Fields["echo_"+k] = v
	}
	return connect.NewResponse(out), nil
}

// serve starts an HTTP/2 (TLS) server on loopback with the procedure
// behind the interceptor, and returns a client of it for the protocol.
func serve(t *testing.T, p *payments, l idemconnect.Ledger, opts idemconnect.Options, protocol []connect.ClientOption, client ...connect.Interceptor) *connect.Client[structpb.Struct, structpb.Struct] {
	t.Helper()
	if opts.Scope == nil {
		opts.Scope = func(context.Context, string, http.Header) (string, error) { return "tenant-1", nil }
	}
	mux := http.NewServeMux()
	mux.Handle(chargeProcedure, connect.NewUnaryHandler(chargeProcedure, p.charge,
		connect.WithInterceptors(idemconnect.NewInterceptor(l, opts))))
	srv := httptest.NewUnstartedServer(mux)
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)
	copts := append([]connect.ClientOption{connect.WithInterceptors(client...)}, protocol...)
	return connect.NewClient[structpb.Struct, structpb.Struct](srv.Client(), srv.URL+chargeProcedure, copts...)
}

// mapMessage is a message with ten map entries, built in an order of its
// own each time: connect-go's binary codec writes map entries in Go's
// random map order, so two sends of it differ byte for byte.
func mapMessage(t *testing.T, amount float64) *structpb.Struct {
	t.Helper()
	m := map[string]any{"amount": amount}
	for i := range 9 {
		m[fmt.Sprintf("meta_%d", i)] = fmt.Sprintf("v%d", i)
	}
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// result is what a client saw of one call.
type result struct {
	charge   string
	code     connect.Code
	replayed string
	err      error
}

func call(ctx context.Context, c *connect.Client[structpb.Struct, structpb.Struct], key string, msg *structpb.Struct) result {
	req := connect.NewRequest(msg)
	if key != "" {
		req.Header().Set(idemconnect.HeaderName, key)
	}
	res, err := c.CallUnary(ctx, req)
	if err != nil {
		r := result{code: connect.CodeOf(err), err: err}
		var ce *connect.Error
		if errors.As(err, &ce) {
			r.replayed = ce.Meta().Get(idemconnect.ReplayedHeader)
		}
		return r
	}
	return result{charge: res.Msg.Fields["charge"].GetStringValue(), replayed: res.Header().Get(idemconnect.ReplayedHeader)}
}

// TestMapMessagePremise: the premise of the replay tests, that two sends of
// one map message differ on the wire (connect-go's binary codec uses
// proto.Marshal, which writes map entries in Go's random order).
func TestMapMessagePremise(t *testing.T) {
	first, err := proto.Marshal(mapMessage(t, 5))
	if err != nil {
		t.Fatal(err)
	}
	for range 20 {
		again, err := proto.Marshal(mapMessage(t, 5))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, first) {
			return
		}
	}
	t.Fatal("20 encodings of a ten-entry map message were identical: the replay tests prove nothing about map order")
}
