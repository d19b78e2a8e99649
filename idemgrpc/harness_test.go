package idemgrpc_test

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
)

// A service without generated code: its messages ship with the protobuf
// module (structpb), its descriptor is registered by hand.
const (
	serviceName  = "idemgrpc.test.Payments"
	methodCharge = "/" + serviceName + "/Charge"
	methodRefund = "/" + serviceName + "/Refund"
)

// payments serves both methods with handle, and counts the runs. conn,
// when set, is a connection to the server, for a handler that sends a
// duplicate of its own call.
type payments struct {
	runs   atomic.Int64
	handle func(ctx context.Context, method string, in *structpb.Struct) (*structpb.Struct, error)
	conn   *grpc.ClientConn
}

func unaryMethod(name string) grpc.MethodDesc {
	full := "/" + serviceName + "/" + name
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(srv any, ctx context.Context, dec func(any) error, icpt grpc.UnaryServerInterceptor) (any, error) {
			in := new(structpb.Struct)
			if err := dec(in); err != nil {
				return nil, err
			}
			p := srv.(*payments)
			h := func(ctx context.Context, req any) (any, error) {
				p.runs.Add(1)
				return p.handle(ctx, full, req.(*structpb.Struct))
			}
			if icpt == nil {
				return h(ctx, in)
			}
			return icpt(ctx, in, &grpc.UnaryServerInfo{Server: srv, FullMethod: full}, h)
		},
	}
}

var paymentsDesc = grpc.ServiceDesc{
	ServiceName: serviceName,
	HandlerType: (*any)(nil),
	Methods:     []grpc.MethodDesc{unaryMethod("Charge"), unaryMethod("Refund")},
}

// recoverPanics is the recovery interceptor that belongs outside
// idemgrpc's: a panic becomes INTERNAL instead of ending the process.
func recoverPanics(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (resp any, err error) {
	defer func() {
		if p := recover(); p != nil {
			resp, err = nil, status.Errorf(codes.Internal, "panic: %v", p)
		}
	}()
	return next(ctx, req)
}

// tenantScope reads the scope from the "tenant" metadata.
func tenantScope(ctx context.Context, _ string) (string, error) {
	return firstMD(ctx, "tenant"), nil
}

// serve starts a gRPC server on a loopback port with the interceptors, and
// returns a client connection to it (with the client interceptors).
func serve(t *testing.T, p *payments, server []grpc.UnaryServerInterceptor, client ...grpc.UnaryClientInterceptor) *grpc.ClientConn {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := grpc.NewServer(grpc.ChainUnaryInterceptor(server...))
	s.RegisterService(&paymentsDesc, p)
	go s.Serve(lis)
	t.Cleanup(s.Stop)
	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithChainUnaryInterceptor(client...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// protected starts a server whose calls idemgrpc protects with a fresh
// ledger of the engine, behind recoverPanics.
func protected(t *testing.T, engine string, p *payments, opts idemgrpc.ServerOptions, client ...grpc.UnaryClientInterceptor) *grpc.ClientConn {
	t.Helper()
	l, _ := newLedger(t, engine, 0)
	if opts.Scope == nil {
		opts.Scope = tenantScope
	}
	return serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, idemgrpc.UnaryServerInterceptor(l, opts)}, client...)
}

func mustStruct(t testing.TB, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// charged answers a charge with its id and amount.
func charged(_ context.Context, _ string, in *structpb.Struct) (*structpb.Struct, error) {
	amount := in.Fields["amount"].GetNumberValue()
	return structpb.NewStruct(map[string]any{"id": fmt.Sprintf("ch_%v", amount), "amount": amount})
}
