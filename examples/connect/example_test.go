package connectexample_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemhttp"
	"github.com/idemledger/idemledger/ledger"
	"github.com/idemledger/idemledger/schema"
	"github.com/idemledger/idemledger/sqlite"
)

const chargeProcedure = "/pay.v1.Payments/Charge"

// chargeHandler is a Connect unary procedure without generated code: its
// messages ship with the protobuf module. It counts its runs.
func chargeHandler(runs *int, opts ...connect.HandlerOption) http.Handler {
	return connect.NewUnaryHandler(chargeProcedure,
		func(ctx context.Context, req *connect.Request[structpb.Struct]) (*connect.Response[structpb.Struct], error) {
			*runs++
			amount := req.Msg.Fields["amount"].GetNumberValue()
			if amount <= 0 {
				return nil, connect.NewError(connect.CodeInvalidArgument, fmt.Errorf("amount must be positive"))
			}
			out, err := structpb.NewStruct(map[string]any{"charge": fmt.Sprintf("ch_%d", *runs), "amount": amount})
			return connect.NewResponse(out), err
		}, opts...)
}

// connectRefuse writes idemhttp's refusals as Connect errors (see the
// package doc for the codes and why).
func connectRefuse(w http.ResponseWriter, r *http.Request, ref idemhttp.Refusal) {
	code, status := "internal", http.StatusInternalServerError
	switch ref.Code {
	case idemhttp.CodeKeyMissing, idemhttp.CodeKeyInvalid, idemhttp.CodeScope, idemhttp.CodeBadRequest:
		code, status = "invalid_argument", http.StatusBadRequest
	case idemhttp.CodeKeyReused:
		code, status = "failed_precondition", http.StatusBadRequest
	case idemhttp.CodeInFlight, idemhttp.CodeUnavailable:
		// idemhttp has set Retry-After for in flight already.
		code, status = "unavailable", http.StatusServiceUnavailable
	case idemhttp.CodeBodyTooLarge:
		code, status = "resource_exhausted", http.StatusTooManyRequests
	}
	body, _ := json.Marshal(map[string]string{"code": code, "message": ref.Detail})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// A Connect procedure behind idemhttp's middleware: the retry with the
// same key gets the first charge back, marked as replayed; the key reused
// for another amount is refused with failed_precondition.
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
	mw := idemhttp.Middleware(l, idemhttp.Options{
		Scope:  func(r *http.Request) (string, error) { return "tenant-1", nil },
		Refuse: connectRefuse,
	})
	mux := http.NewServeMux()
	mux.Handle(chargeProcedure, mw(chargeHandler(&runs)))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	// idemhttp.Transport retries an in-flight refusal with the same key.
	client := connect.NewClient[structpb.Struct, structpb.Struct](
		&http.Client{Transport: &idemhttp.Transport{MaxElapsed: 10 * time.Second}}, srv.URL+chargeProcedure)
	call := func(amount float64) {
		msg, _ := structpb.NewStruct(map[string]any{"amount": amount})
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
