package idemclient

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestTransportCheck: a Transport whose fields are out of range fails
// every request with an error naming the field, before anything reaches
// the server (a newcomer's Methods: []string{"post"} sent every POST
// unkeyed and never retried it, without a word); one in range sends.
func TestTransportCheck(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.WriteHeader(201)
	}))
	defer srv.Close()
	tests := []struct {
		name string
		tr   Transport
		want string // the error; empty when the request is sent
	}{
		{"zero", Transport{}, ""},
		{"every field in range", Transport{Methods: []string{"POST", "PUT", "purge"}, MaxAttempts: 1, MaxElapsed: time.Second,
			AttemptTimeout: time.Second, InitialBackoff: time.Millisecond, MaxBackoff: time.Second,
			RetryStatuses: []int{100, 599}, ReplayHeader: "X-Replayed"}, ""},
		{"lower-case post", Transport{Methods: []string{"post"}},
			`idemclient: transport: Transport.Methods: "post" is not "POST": methods are case-sensitive (RFC 9110 Section 9.1)`},
		{"method with a space", Transport{Methods: []string{"PO ST"}},
			`idemclient: transport: Transport.Methods: "PO ST" is not a method (a token, RFC 9110 Section 9.1)`},
		{"negative attempts", Transport{MaxAttempts: -1}, "idemclient: transport: Transport.MaxAttempts: -1 is negative"},
		{"negative elapsed", Transport{MaxElapsed: -time.Second}, "idemclient: transport: Transport.MaxElapsed: -1s is negative"},
		{"negative attempt timeout", Transport{AttemptTimeout: -1}, "idemclient: transport: Transport.AttemptTimeout: -1ns is negative"},
		{"negative initial backoff", Transport{InitialBackoff: -time.Millisecond}, "idemclient: transport: Transport.InitialBackoff: -1ms is negative"},
		{"negative max backoff", Transport{MaxBackoff: -time.Minute}, "idemclient: transport: Transport.MaxBackoff: -1m0s is negative"},
		{"status 600", Transport{RetryStatuses: []int{503, 600}}, "idemclient: transport: Transport.RetryStatuses: 600 is not a status code (100 to 599)"},
		{"status 0", Transport{RetryStatuses: []int{0}}, "idemclient: transport: Transport.RetryStatuses: 0 is not a status code (100 to 599)"},
		{"replay header with a space", Transport{ReplayHeader: "x y"},
			`idemclient: transport: Transport.ReplayHeader: "x y" is not a field name (RFC 9110 Section 5.1)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := hits.Load()
			req, err := http.NewRequest("POST", srv.URL, strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := tt.tr.RoundTrip(req)
			sent := hits.Load() - before
			if tt.want == "" {
				if err != nil || resp.StatusCode != 201 || sent != 1 {
					t.Fatalf("RoundTrip = %v, %v after %d requests; want 201 after one", resp, err, sent)
				}
				resp.Body.Close()
				return
			}
			if err == nil || err.Error() != tt.want || sent != 0 {
				t.Errorf("RoundTrip error %v after %d requests; want %q before any", err, sent, tt.want)
			}
		})
	}
}
