package idemgrpc_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"

	"github.com/idemledger/idemledger/idemgrpc"
)

// TestClientNeverRetriesReplay: a stored UNAVAILABLE (ShouldStore keeps
// every code here) is the first call's answer; the client interceptor
// retries the first attempt's UNAVAILABLE once, gets the replay, and stops
// there instead of retrying it until MaxAttempts. On every driver.
func TestClientNeverRetriesReplay(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		p := &payments{handle: func(context.Context, string, *structpb.Struct) (*structpb.Struct, error) {
			return nil, status.Error(codes.Unavailable, "card network down")
		}}
		l, _ := newLedger(t, engine, 0)
		conn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{
			Scope: tenantScope, ShouldStore: func(codes.Code) bool { return true },
		})}, idemgrpc.UnaryClientInterceptor(idemgrpc.ClientOptions{InitialBackoff: time.Millisecond}))
		err := conn.Invoke(withKey(context.Background(), "replayed-unavailable"), methodCharge,
			mustStruct(t, map[string]any{"amount": 1}), new(structpb.Struct))
		var ce *idemgrpc.CallError
		if !errors.As(err, &ce) || ce.Attempts != 2 || status.Code(err) != codes.Unavailable || status.Convert(err).Message() != "card network down" {
			t.Fatalf("%v (%+v); want the stored UNAVAILABLE after 2 attempts (the first, then its replay)", err, ce)
		}
		if n := p.runs.Load(); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}
	})
}

// TestGRPCRetryPolicyWaitsForInFlight: grpc-go's own retry policy (a
// service config, no interceptor on the client) retries the in-flight
// UNAVAILABLE after the pushback trailer's delay, so that duplicates sent
// while a slow first call runs all end with its answer. Eight duplicates
// of a 600 ms call, a policy of 5 attempts with a 10 ms backoff: without
// the pushback, its attempts would be spent in about 150 ms. On every
// driver.
func TestGRPCRetryPolicyWaitsForInFlight(t *testing.T) {
	eachEngine(t, func(t *testing.T, engine string) {
		var running atomic.Int32
		p := &payments{handle: func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
			running.Add(1)
			time.Sleep(600 * time.Millisecond)
			return charged(ctx, m, in)
		}}
		l, _ := newLedger(t, engine, 0)
		lisConn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{
			Scope: tenantScope, InFlightRetryAfter: 200 * time.Millisecond,
		})})
		const policy = `{"methodConfig":[{"name":[{"service":"idemgrpc.test.Payments"}],"retryPolicy":{
			"maxAttempts":5,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,
			"retryableStatusCodes":["UNAVAILABLE"]}}]}`
		conn, err := grpc.NewClient(lisConn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()),
			grpc.WithDefaultServiceConfig(policy))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		in := mustStruct(t, map[string]any{"amount": 7})
		first := make(chan error, 1)
		go func() {
			first <- conn.Invoke(withKey(context.Background(), "slow"), methodCharge, in, new(structpb.Struct))
		}()
		for running.Load() == 0 {
			time.Sleep(time.Millisecond)
		}
		errs := make(chan error, 8)
		for range 8 {
			go func() {
				out := new(structpb.Struct)
				err := conn.Invoke(withKey(context.Background(), "slow"), methodCharge, in, out)
				if err == nil && out.Fields["id"].GetStringValue() != "ch_7" {
					err = errors.New("answer " + out.String())
				}
				errs <- err
			}()
		}
		for range 8 {
			if err := <-errs; err != nil {
				t.Errorf("duplicate: %v; want the first call's answer", err)
			}
		}
		if err := <-first; err != nil {
			t.Fatal(err)
		}
		if n := p.runs.Load(); n != 1 {
			t.Errorf("handler ran %d times, want 1", n)
		}
	})
}

// TestGRPCRetryPolicyWithWait: eight duplicates of a call slower than
// grpc-go's retry policy lasts (5 s; the policy of grpc-go's retry example,
// with 5 attempts, spends them in about 4 s against the default 1 s
// pushback), against the server's defaults and ServerOptions.Wait 10 s. With
// Wait each duplicate's first attempt waits and ends with the first call's
// answer; without it every duplicate ends with the in-flight UNAVAILABLE.
// The handler runs once either way. On every driver.
func TestGRPCRetryPolicyWithWait(t *testing.T) {
	const (
		slow       = 5 * time.Second
		duplicates = 8
		policy     = `{"methodConfig":[{"name":[{"service":"idemgrpc.test.Payments"}],"retryPolicy":{
			"maxAttempts":5,"initialBackoff":"0.01s","maxBackoff":"0.01s","backoffMultiplier":1,
			"retryableStatusCodes":["UNAVAILABLE"]}}]}`
	)
	eachEngine(t, func(t *testing.T, engine string) {
		for _, wait := range []time.Duration{10 * time.Second, 0} {
			t.Run(fmt.Sprintf("wait=%v", wait), func(t *testing.T) {
				t.Parallel()
				var running atomic.Int32
				p := &payments{handle: func(ctx context.Context, m string, in *structpb.Struct) (*structpb.Struct, error) {
					running.Add(1)
					time.Sleep(slow)
					return charged(ctx, m, in)
				}}
				var attempts atomic.Int32
				l, _ := newLedger(t, engine, 0)
				count := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, next grpc.UnaryHandler) (any, error) {
					attempts.Add(1)
					return next(ctx, req)
				}
				lisConn := serve(t, p, []grpc.UnaryServerInterceptor{recoverPanics, count, idemgrpc.UnaryServerInterceptor(l, idemgrpc.ServerOptions{
					Scope: tenantScope, Wait: wait,
				})})
				conn, err := grpc.NewClient(lisConn.Target(), grpc.WithTransportCredentials(insecure.NewCredentials()),
					grpc.WithDefaultServiceConfig(policy))
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				in := mustStruct(t, map[string]any{"amount": 7})
				call := func() string {
					out := new(structpb.Struct)
					if err := conn.Invoke(withKey(context.Background(), "slow"), methodCharge, in, out); err != nil {
						return status.Code(err).String() + " " + reasonOf(err)
					}
					return out.Fields["id"].GetStringValue()
				}
				first := make(chan string, 1)
				go func() { first <- call() }()
				for running.Load() == 0 {
					time.Sleep(time.Millisecond)
				}
				outs := make(chan string, duplicates)
				for range duplicates {
					go func() { outs <- call() }()
				}
				want, perDuplicate := "ch_7", int32(1)
				if wait == 0 {
					want, perDuplicate = "Unavailable "+idemgrpc.ReasonInFlight, 5
				}
				ended := 0
				for range duplicates {
					out := <-outs
					if out == "ch_7" {
						ended++
					}
					if out != want {
						t.Errorf("duplicate: %q, want %q", out, want)
					}
				}
				t.Logf("Wait %v: %d of %d duplicates ended with the first answer; %d attempts", wait, ended, duplicates, attempts.Load())
				if got := <-first; got != "ch_7" {
					t.Errorf("first call: %q, want ch_7", got)
				}
				if got, want := attempts.Load(), 1+duplicates*perDuplicate; got != want {
					t.Errorf("%d attempts reached the server, want %d (the first, and %d from each duplicate)", got, want, perDuplicate)
				}
				if n := p.runs.Load(); n != 1 {
					t.Errorf("handler ran %d times, want 1", n)
				}
			})
		}
	})
}
