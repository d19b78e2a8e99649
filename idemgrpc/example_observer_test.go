package idemgrpc_test

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// The server's events go to slog through ledger.LogObserver and, beside
// it, to a counter of events per kind, as a metrics observer would count
// them (package idemotel records them as OpenTelemetry metrics). Neither
// sees the key or the scope.
func ExampleServerOptions_observer() {
	dir, _ := os.MkdirTemp("", "idemgrpc")
	defer os.RemoveAll(dir)
	db, err := sqlite.Open(filepath.Join(dir, "ledger.db"))
	if err != nil {
		panic(err)
	}
	defer db.Close()
	d := sqlite.New(db)
	if err := schema.Migrate(context.Background(), d); err != nil {
		panic(err)
	}
	l, err := ledger.New(d, ledger.Options{})
	if err != nil {
		panic(err)
	}
	defer l.Close()

	// Log records without their time and duration, so that the output
	// stays the same from run to run.
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelDebug,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == "duration" {
				return slog.Attr{}
			}
			return a
		},
	}))
	var mu sync.Mutex
	counts := map[string]int{}
	metrics := ledger.ObserverFunc(func(_ context.Context, e ledger.Event) {
		mu.Lock()
		defer mu.Unlock()
		counts[e.Kind.String()]++
	})

	p := &payments{handle: charged}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(recoverPanics,
		idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{
			Scope:    func(ctx context.Context, _ string) (string, error) { return "tenant-1", nil },
			Observer: ledger.Observers(ledger.LogObserver(logger), metrics),
		})))
	srv.RegisterService(&paymentsDesc, p)
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(lis)
	defer srv.Stop()
	conn, err := grpc.NewClient(lis.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	ctx := metadata.AppendToOutgoingContext(context.Background(), idemgrpc.MetadataKey, "order-42")
	in, _ := structpb.NewStruct(map[string]any{"amount": 1250})
	for range 2 {
		if err := conn.Invoke(ctx, methodCharge, in, new(structpb.Struct)); err != nil {
			panic(err)
		}
	}
	other, _ := structpb.NewStruct(map[string]any{"amount": 99})
	err = conn.Invoke(ctx, methodCharge, other, new(structpb.Struct))
	fmt.Println("reused:", err != nil)
	mu.Lock()
	fmt.Println(counts)
	mu.Unlock()
	// Output:
	// level=DEBUG msg="idempotency: claimed" method=/idemgrpc.test.Payments/Charge route=/idemgrpc.test.Payments/Charge
	// level=DEBUG msg="idempotency: stored" method=/idemgrpc.test.Payments/Charge route=/idemgrpc.test.Payments/Charge
	// level=INFO msg="idempotency: replayed" method=/idemgrpc.test.Payments/Charge route=/idemgrpc.test.Payments/Charge
	// level=WARN msg="idempotency: key_reused" method=/idemgrpc.test.Payments/Charge route=/idemgrpc.test.Payments/Charge status=9
	// reused: true
	// map[claimed:1 key_reused:1 replayed:1 stored:1]
}
