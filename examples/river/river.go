// Package river shows, in tested code, a River job worker
// (github.com/riverqueue/river) whose outside call, an HTTP POST to a
// payments API, happens once per job although River runs jobs at least
// once ("workers should always expect to be run at least once").
//
// River's own JobCompleteTx already covers a job's database effects: make
// them in the transaction that completes the job and they commit with it.
// ledger.Mutate adds nothing there but the record (use it in that
// transaction only if you want one). This example is for the effects
// outside the database, which no transaction can roll back, and uses
// idemledger's lease mode on the same pgx pool as River:
//
//   - Claim the key (scope "river:<kind>", key the job's ID, fingerprint the
//     hash of the job's encoded args) before the call;
//   - a replay (the job ran before, River did not record it) returns nil
//     without calling, so River completes the job;
//   - a key in flight (another attempt of the job runs right now, or one
//     died holding the lease) returns an error wrapping ledger.ErrInFlight,
//     so River retries it later;
//   - a call that fails releases the key (Release) and returns the error,
//     so River's retry calls again;
//   - after the call, Commit marks the commit point at once, then Complete
//     stores the receipt. An attempt that dies between the call and
//     Complete leaves a committed record: once its lease runs out a retry
//     gets ledger.ErrCommitted and the worker cancels the job
//     (river.JobCancel) rather than pay twice; look the payment up then
//     (or claim with Request.Recover and ask the API). The same happens
//     for ErrKeyReused (the job's args changed under its ID).
//
// The call must finish within the ledger's lease (Options.Lease), or call
// Ledger.Extend while it runs. A failure after the request left (a
// timeout, a lost answer) may hide a charge that was made, and releasing
// then lets the retry charge again; the worker therefore also sends a key
// derived from the job's as the payments API's Idempotency-Key, so an API
// that honours one covers that gap, and the one between its effect and
// Commit.
package river

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/jackc/pgx/v5"
	"github.com/riverqueue/river"

	"github.com/idemledger/idemledger/hash"
	"github.com/idemledger/idemledger/ledger"
)

// ChargeArgs is the job: charge an order.
type ChargeArgs struct {
	OrderID     string `json:"order_id"`
	AmountCents int64  `json:"amount_cents"`
}

// Kind is the job's kind in River.
func (ChargeArgs) Kind() string { return "charge" }

// OutcomeKind is the Kind of the outcomes the worker stores.
const OutcomeKind = "river"

// ChargeWorker charges each ChargeArgs job's order once through the
// payments API at PaymentsURL.
type ChargeWorker struct {
	river.WorkerDefaults[ChargeArgs]
	Ledger      *ledger.Ledger[pgx.Tx]
	HTTP        *http.Client // http.DefaultClient when nil
	PaymentsURL string
}

// Request returns the ledger request of job: one key per job.
func Request(job *river.Job[ChargeArgs]) ledger.Request {
	return ledger.Request{
		Scope:       "river:" + job.Kind,
		Key:         strconv.FormatInt(job.ID, 10),
		Fingerprint: hash.Bytes(job.EncodedArgs),
	}
}

// Work charges the order unless an earlier attempt of the job did.
func (w *ChargeWorker) Work(ctx context.Context, job *river.Job[ChargeArgs]) error {
	req := Request(job)
	c, err := w.Ledger.Claim(ctx, req)
	switch {
	case errors.Is(err, ledger.ErrCommitted), errors.Is(err, ledger.ErrKeyReused):
		// Retrying cannot help: the charge was made (its receipt lost),
		// or these are not the args that were charged.
		return river.JobCancel(fmt.Errorf("charge %s: %w", job.Args.OrderID, err))
	case err != nil:
		// ErrInFlight among others: River retries the job later.
		return fmt.Errorf("charge %s: %w", job.Args.OrderID, err)
	case c.Replayed():
		return nil
	}
	receipt, err := w.charge(ctx, job.Args, hash.DeriveKey(req.Scope, req.Key))
	if err != nil {
		// Before the commit point: drop the claim so that the retry
		// calls again.
		if rerr := w.Ledger.Release(ctx, c); rerr != nil {
			return errors.Join(err, fmt.Errorf("release: %w", rerr))
		}
		return err
	}
	if err := w.Ledger.Commit(ctx, c); err != nil {
		return fmt.Errorf("charge %s: commit point: %w", job.Args.OrderID, err)
	}
	if err := w.Ledger.Complete(ctx, c, ledger.Outcome{Kind: OutcomeKind, Body: receipt}); err != nil {
		return fmt.Errorf("charge %s: complete: %w", job.Args.OrderID, err)
	}
	return nil
}

// charge POSTs args to the payments API and returns its receipt.
func (w *ChargeWorker) charge(ctx context.Context, args ChargeArgs, key string) ([]byte, error) {
	body, err := json.Marshal(args)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.PaymentsURL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	client := w.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("charge %s: %w", args.OrderID, err)
	}
	defer resp.Body.Close()
	receipt, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("charge %s: %w", args.OrderID, err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("charge %s: payments API answered %s", args.OrderID, resp.Status)
	}
	return receipt, nil
}
