package connectexample_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemconnect"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

const chargeProcedure = "/pay.v1.Payments/Charge"

// A Connect procedure protected by idemconnect: the retry with the same key
// gets the first charge back, marked as replayed, whatever order the map
// entries of the message took on the wire; the key reused for another
// amount is refused with failed_precondition.
func Example() {
	dir, _ := os.MkdirTemp("", "idemconnect")
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

	runs := 0
	charge := func(ctx context.Context, req *connect.Request[structpb.Struct]) (*connect.Response[structpb.Struct], error) {
		runs++
		idemconnect.Commit(ctx) // the card is charged: never run this again for the key
		out, err := structpb.NewStruct(map[string]any{"charge": fmt.Sprintf("ch_%d", runs)})
		return connect.NewResponse(out), err
	}
	protect := idemconnect.NewInterceptor(l, idemconnect.Options{
		Scope: func(ctx context.Context, procedure string, h http.Header) (string, error) { return "tenant-1", nil },
	})
	mux := http.NewServeMux()
	mux.Handle(chargeProcedure, connect.NewUnaryHandler(chargeProcedure, charge, connect.WithInterceptors(protect)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	client := connect.NewClient[structpb.Struct, structpb.Struct](http.DefaultClient, srv.URL+chargeProcedure,
		connect.WithInterceptors(idemconnect.NewClientInterceptor(idemconnect.ClientOptions{})))
	call := func(amount float64) {
		msg, _ := structpb.NewStruct(map[string]any{"amount": amount, "currency": "EUR", "order": "42"})
		req := connect.NewRequest(msg)
		req.Header().Set("Idempotency-Key", "order-42")
		resp, err := client.CallUnary(context.Background(), req)
		if err != nil {
			fmt.Println(connect.CodeOf(err))
			return
		}
		fmt.Printf("%s replayed=%q\n", resp.Msg.Fields["charge"].GetStringValue(), resp.Header().Get("Idempotent-Replayed"))
	}
	call(1250)
	call(1250)
	call(99)
	fmt.Println("runs:", runs)
	// Output:
	// ch_1 replayed=""
	// ch_1 replayed="true"
	// failed_precondition
	// runs: 1
}
