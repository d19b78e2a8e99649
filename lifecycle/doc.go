// Package lifecycle is the transport-neutral life of one keyed request in
// lease mode: the decision to run, replay or refuse it, and the run under a
// lease (heartbeat, commit point, completion or release, cancellation when
// the lease is lost), with the event of each step. Every integration of
// this module (idemhttp, idemgrpc, idemconnect, consume) is a mapping of
// its verdicts to a wire; a third party writes a new transport (a router
// of its own, a broker, JSON-RPC) the same way, with this package alone.
//
// # A transport in four steps
//
//  1. Make a [ledger.Request] from the incoming request: the scope (who
//     owns the key), the idempotency key, and a fingerprint of what the
//     request asks for (package hash).
//  2. Call [Decide]. It claims the key and returns a [Decision].
//  3. Map the verdict: Replayed answers [Decision.Outcome]; Refused answers
//     Decision.Refusal (the table below); Unprotected runs the handler
//     without a claim. Report Decision.Event, with the transport's status,
//     when its Kind is not zero.
//  4. For Claimed, run the handler with [Run.Context] as its context, then
//     [Run.Stop], and end the run: [Run.Complete] with the answer to keep,
//     or [Run.Release] when a retry should run the handler again (a
//     transient failure before the commit point). A handler that makes an
//     irreversible effect calls [Run.Commit] (reachable from its context
//     through [FromContext]) right after it.
//
// # Transaction mode
//
// A handler whose effects are all writes in the ledger's database runs in
// transaction mode instead: [DecideTx] begins a transaction, runs the
// handler inside it under the key, and commits its writes, the record and
// the outcome together, or answers from the record. Map its [TxDecision]
// as above; a Claimed verdict with Err set means that nothing was kept.
// idemhttp's TxHandler and consume's HandleTx are such mappings.
//
// # Refusals and what they mean
//
//	Why          HTTP   gRPC / Connect        consumer      final?
//	InFlight     409    UNAVAILABLE           nack, delay   no: come back after RetryAfter
//	KeyReused    422    FAILED_PRECONDITION   dead letter   yes, for the record's TTL
//	NotStored    410    DATA_LOSS             dead letter   yes, for the record's TTL
//	Invalid      400    INVALID_ARGUMENT      dead letter   yes
//	Busy         503    UNAVAILABLE           nack, delay   no
//	Unavailable  503    UNAVAILABLE           nack, delay   no
//	Canceled     503    the context's code    nack          no (nobody reads it)
//
// # Answers are true
//
// A [NotStored] refusal is final: it is given only after the run that passed
// its commit point has been fenced out (its record taken over and
// completed with a [KindNotStored] marker), so the first run cannot store
// an answer after a retry was told the answer is gone. While the first run
// may still answer, a retry is told [InFlight], or waits ([Config].Wait).
// An answer given by a handler after its run learned that the lease is
// lost is not stored ([Run.Complete]). A store that blocks past the lease
// after the handler's effect is waited out by [Run.Commit] rather than
// answered as a lost lease.
//
// # Steps
//
// A handler whose work has several effects records each as a step
// ([Run.Step] for an effect outside the database, with a key derived for
// the provider; [StepTx] for writes in the caller's transaction). A retry
// after a crash, a lost lease or a release resumes the operation: the
// recorded steps return their results without running, and the handler
// goes on from the first step not recorded. See docs/steps.md.
//
// # Waiting duplicates
//
// With [Config].Wait set, a duplicate that finds the key in flight polls
// the record (at first every few milliseconds, then every 50 to 100 ms)
// until the first run stores its answer (Replayed), releases the key
// (Claimed: the duplicate runs itself), or the budget or the request's
// context ends (InFlight).
package lifecycle
