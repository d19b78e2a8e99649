package canonical

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Benchmark inputs, built deterministically. The same shapes are used by
// the peer comparison in the bench module.
var benchInputs = []struct {
	name string
	src  func() []byte
}{
	{"api1KB", apiPayload},
	{"numbers100KB", numbersPretty},
	{"array1MB", arrayOfObjects},
	{"members5000", wideObject},
	{"nested1000", nestedUnsorted},
}

// apiPayload is a typical ~1 KB API request body: nested objects, strings
// with a few escapes, small numbers, out-of-order names.
func apiPayload() []byte {
	return []byte(`{
  "type": "payment_intent.create",
  "idempotency": {"scope": "acct_1Hh1XY2eZvKYlo2C", "attempt": 3},
  "amount": 129900,
  "currency": "eur",
  "description": "Order #10492 \u2014 \"Deluxe\" plan, 12 months",
  "customer": {
    "name": "Zoë Müller",
    "email": "zoe.mueller@example.com",
    "address": {"postal_code": "10115", "line1": "Invalidenstraße 117", "country": "DE", "city": "Berlin"},
    "tags": ["vip", "beta", "newsletter"]
  },
  "metadata": {"order_id": "10492", "cart_id": "c_8f3e2a", "source": "web", "campaign": "spring/2024"},
  "items": [
    {"sku": "PLAN-DLX-12", "quantity": 1, "unit_amount": 119900, "tax_rate": 0.19},
    {"sku": "ADDON-SUPPORT", "quantity": 2, "unit_amount": 5000, "tax_rate": 0.19}
  ],
  "capture_method": "automatic",
  "confirm": true,
  "return_url": "https:\/\/shop.example.com\/checkout\/complete?order=10492",
  "risk": {"score": 12.75, "level": "normal", "checks": {"cvc": "pass", "postal": "pass", "3ds": null}}
}`)
}

// numbersPretty is ~100 KB of indented measurements: floats of every
// magnitude, integers, exponents.
func numbersPretty() []byte {
	r := rand.New(rand.NewPCG(1, 2))
	var b bytes.Buffer
	b.WriteString("{\n  \"series\": [\n")
	for i := 0; b.Len() < 100_000; i++ {
		if i > 0 {
			b.WriteString(",\n")
		}
		fmt.Fprintf(&b, "    {\n      \"t\": %d,\n      \"value\": %v,\n      \"delta\": %.6f,\n      \"scale\": %e,\n      \"count\": %d\n    }",
			1700000000000+int64(i)*1000, r.NormFloat64()*1000, r.Float64()-0.5, r.ExpFloat64()*1e-9, r.IntN(100000))
	}
	b.WriteString("\n  ]\n}\n")
	return b.Bytes()
}

// arrayOfObjects is ~1 MB of compact records as an export might hold.
func arrayOfObjects() []byte {
	r := rand.New(rand.NewPCG(3, 4))
	var b bytes.Buffer
	b.WriteByte('[')
	for i := 0; b.Len() < 1_000_000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"user-%d","email":"u%d@example.com","active":%t,"score":%.2f,"roles":["read","write"],"created":"2024-01-%02dT10:00:00Z"}`,
			i, i, i, r.IntN(2) == 0, r.Float64()*100, 1+r.IntN(28))
	}
	b.WriteByte(']')
	return b.Bytes()
}

// wideObject is one object with 5,000 members in shuffled order.
func wideObject() []byte {
	r := rand.New(rand.NewPCG(5, 6))
	idx := r.Perm(5000)
	var b bytes.Buffer
	b.WriteByte('{')
	for i, k := range idx {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"field_%05d":%d`, k, r.IntN(1_000_000))
	}
	b.WriteByte('}')
	return b.Bytes()
}

// nestedUnsorted is the worst case for reordering: a 1 MB string under
// 1000 levels of objects whose members are all out of order. Each byte is
// still copied once, not once per level.
func nestedUnsorted() []byte {
	return []byte(strings.Repeat(`{"b":`, 1000) + `"` + strings.Repeat("x", 1<<20) + `"` + strings.Repeat(`,"a":0}`, 1000))
}

func BenchmarkTransform(b *testing.B) {
	for _, in := range benchInputs {
		src := in.src()
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Transform(src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkAppend reuses the output buffer, as a caller hashing many
// payloads would.
func BenchmarkAppend(b *testing.B) {
	for _, in := range benchInputs {
		src := in.src()
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			var dst []byte
			for b.Loop() {
				var err error
				if dst, err = Append(dst[:0], src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCompact is the floor: encoding/json.Compact only strips
// whitespace, with no sorting, no number or string rewriting.
func BenchmarkCompact(b *testing.B) {
	for _, in := range benchInputs {
		src := in.src()
		b.Run(in.name, func(b *testing.B) {
			b.SetBytes(int64(len(src)))
			b.ReportAllocs()
			for b.Loop() {
				var dst bytes.Buffer
				if err := json.Compact(&dst, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestBenchInputsValid(t *testing.T) {
	for _, in := range benchInputs {
		src := in.src()
		out, err := Transform(src)
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		if !json.Valid(out) || strings.ContainsAny(string(out), "\n ") && in.name != "api1KB" {
			t.Errorf("%s: output not compact JSON", in.name)
		}
		t.Logf("%s: %d bytes in, %d out", in.name, len(src), len(out))
	}
}
