package drivertest

import (
	"bytes"
	"context"
	"testing"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/testdb"
)

// steps: the Stepper's statements at the boundary: a step is recorded only
// under the held lease, with the record's fingerprint and fence, replaces
// one of the same name, and reads back exactly (an empty result as
// empty); HasSteps and Steps see only the fingerprint's; DeleteSteps
// deletes nothing while the record is in flight; PurgeSteps deletes the
// steps of ended operations recorded at its cutoff or earlier, up to its
// limit; CountSteps and FindSteps count and list them.
func steps[TTx any](t *testing.T, d *testdb.DB[TTx]) {
	ctx := context.Background()
	ex := d.Driver.DB()
	must(ex.Claim(ctx, claimParams("k", "tok", t0)))(t)
	held := driver.LeaseParams{Scope: "s", Key: "k", Token: "tok", Fence: 1}
	of := driver.StepsParams{Scope: "s", Key: "k", Fingerprint: fp}
	for _, other := range []driver.LeaseParams{
		{Scope: "s", Key: "k", Token: "other", Fence: 1},
		{Scope: "s", Key: "k", Token: "tok", Fence: 2},
		{Scope: "s", Key: "none", Token: "tok", Fence: 1},
	} {
		if ok := must(ex.RecordStep(ctx, driver.RecordStepParams{LeaseParams: other, Name: "a", Result: []byte("x"), Now: t0}))(t); ok {
			t.Errorf("RecordStep with %+v: recorded", other)
		}
	}
	for _, s := range []driver.RecordStepParams{
		{LeaseParams: held, Name: "a", Result: []byte("old"), Now: t0},
		{LeaseParams: held, Name: "a", Result: []byte("\x00new\xff"), Now: t0 + 1},
		{LeaseParams: held, Name: "b", Result: []byte{}, Now: t0 + 2},
	} {
		if ok := must(ex.RecordStep(ctx, s))(t); !ok {
			t.Fatalf("RecordStep %+v: not recorded", s)
		}
	}
	got := must(ex.Steps(ctx, of))(t)
	byName := map[string][]byte{}
	for _, s := range got {
		byName[s.Name] = s.Result
	}
	if len(got) != 2 || !bytes.Equal(byName["a"], []byte("\x00new\xff")) || len(byName["b"]) != 0 {
		t.Errorf("Steps = %q; want a = \\x00new\\xff (replaced) and b empty", got)
	}
	other := driver.StepsParams{Scope: "s", Key: "k", Fingerprint: bytes.Repeat([]byte{0xcd}, 32)}
	if got := must(ex.Steps(ctx, other))(t); len(got) != 0 {
		t.Errorf("Steps of another fingerprint: %q", got)
	}
	for _, c := range []struct {
		p    driver.StepsParams
		want bool
	}{{of, true}, {other, false}} {
		if has := must(ex.HasSteps(ctx, c.p))(t); has != c.want {
			t.Errorf("HasSteps(%x) = %v; want %v", c.p.Fingerprint[:1], has, c.want)
		}
	}
	rows := must(ex.FindSteps(ctx, "k", 10))(t)
	if len(rows) != 2 || rows[0].Name != "a" || rows[0].Fence != 1 || rows[0].CreatedAt != t0+1 || !bytes.Equal(rows[0].Fingerprint, fp) || rows[1].Name != "b" {
		t.Errorf("FindSteps = %+v", rows)
	}
	if n := must(ex.CountSteps(ctx))(t); n != 2 {
		t.Errorf("CountSteps = %d; want 2", n)
	}
	// In flight: neither deleted nor purged.
	if n := must(ex.DeleteSteps(ctx, of))(t); n != 0 {
		t.Errorf("DeleteSteps in flight deleted %d", n)
	}
	if n := must(ex.PurgeSteps(ctx, driver.PurgeStepsParams{Before: t0 + 100, Limit: 10}))(t); n != 0 {
		t.Errorf("PurgeSteps of an operation in flight deleted %d", n)
	}
	// Completed: purged up to the cutoff and the limit, or deleted.
	must(ex.Complete(ctx, driver.CompleteParams{LeaseParams: held, Status: 200, TTLMillis: 10_000, Now: t0 + 3}))(t)
	if n := must(ex.PurgeSteps(ctx, driver.PurgeStepsParams{Before: t0 + 1, Limit: 10}))(t); n != 1 {
		t.Errorf("PurgeSteps up to t0+1 deleted %d; want 1 (a)", n)
	}
	if n := must(ex.DeleteSteps(ctx, of))(t); n != 1 {
		t.Errorf("DeleteSteps after Complete deleted %d; want 1 (b)", n)
	}
	if n := must(ex.CountSteps(ctx))(t); n != 0 {
		t.Errorf("CountSteps = %d; want 0", n)
	}
}
