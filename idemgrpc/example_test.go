package idemgrpc_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

// A payment service protected on the server side and retried with its
// key on the client side. The second call with the same key is answered
// from the ledger: same message, marked as replayed, no second charge.
func Example() {
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

	// The server: the interceptor, given the ledger and who owns the keys.
	charges := 0
	p := &payments{handle: func(ctx context.Context, _ string, in *structpb.Struct) (*structpb.Struct, error) {
		charges++
		return structpb.NewStruct(map[string]any{"id": fmt.Sprintf("ch_%d", charges)})
	}}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(
		recoverPanics,
		idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{
			Scope: func(ctx context.Context, _ string) (string, error) { return "tenant-1", nil },
		})))
	srv.RegisterService(&paymentsDesc, p)
	lis, _ := net.Listen("tcp", "127.0.0.1:0")
	go srv.Serve(lis)
	defer srv.Stop()

	// The client: the interceptor adds a key when the call has none.
	conn, err := grpc.NewClient(lis.Addr().String(),
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithUnaryInterceptor(idemgrpc.UnaryClientInterceptor(idemgrpc.ClientOptions{})))
	if err != nil {
		panic(err)
	}
	defer conn.Close()

	ctx := metadata.AppendToOutgoingContext(context.Background(), idemgrpc.MetadataKey, "order-42")
	in, _ := structpb.NewStruct(map[string]any{"amount": 1250})
	for range 2 {
		out := new(structpb.Struct)
		var header metadata.MD
		if err := conn.Invoke(ctx, methodCharge, in, out, grpc.Header(&header)); err != nil {
			panic(err)
		}
		fmt.Println(out.Fields["id"].GetStringValue(), "replayed:", header.Get(idemgrpc.ReplayedKey))
	}
	fmt.Println("charges:", charges)
	// Output:
	// ch_1 replayed: []
	// ch_1 replayed: [true]
	// charges: 1
}
