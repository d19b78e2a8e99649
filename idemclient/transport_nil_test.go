package idemclient

import (
	"net/http"
	"strings"
	"testing"
)

// TestTransportNilInputs: a nil *Transport works as the zero Transport
// (a key on POST, retries with the defaults), a request without a Header
// still gets its key, and a nil request is an error, not a panic.
func TestTransportNilInputs(t *testing.T) {
	// 503 with Retry-After 0 is retried at once under the defaults.
	retryNow := http.Header{"Retry-After": {"0"}}
	tests := []struct {
		name      string
		transport *Transport
		script    []int
		nilHeader bool
		nilReq    bool
		wantErr   string
		attempts  int
	}{
		{name: "nil transport", transport: nil, script: []int{http.StatusServiceUnavailable}, attempts: 2},
		{name: "nil header", transport: fastTransport(), script: []int{0}, nilHeader: true, attempts: 2},
		{name: "nil transport, nil header", transport: nil, nilHeader: true, attempts: 1},
		{name: "nil request", transport: fastTransport(), nilReq: true, wantErr: "idemclient: transport: nil request"},
		{name: "nil transport, nil request", transport: nil, nilReq: true, wantErr: "idemclient: transport: nil request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := newFlakyServer(t, tt.script, retryNow)
			var req *http.Request
			if !tt.nilReq {
				var err error
				req, err = http.NewRequest(http.MethodPost, fs.URL, strings.NewReader("body"))
				if err != nil {
					t.Fatal(err)
				}
				if tt.nilHeader {
					req.Header = nil
				}
			}
			// The RoundTripper interface holds a nil *Transport, as an
			// http.Client's Transport field would.
			var rt http.RoundTripper = tt.transport
			resp, err := rt.RoundTrip(req)
			if tt.wantErr != "" {
				if resp != nil || err == nil || err.Error() != tt.wantErr {
					t.Fatalf("RoundTrip = %v, %v; want error %q", resp, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("status %d, want 201", resp.StatusCode)
			}
			seen := fs.seen()
			if len(seen) != tt.attempts {
				t.Fatalf("server saw %d attempts, want %d", len(seen), tt.attempts)
			}
			for i, a := range seen {
				if len(a.keys) != 1 || a.keys[0] != seen[0].keys[0] || !uuidV4.MatchString(strings.Trim(a.keys[0], `"`)) || a.body != "body" {
					t.Errorf("attempt %d = %+v, want one quoted UUID v4 key, the same on every attempt, and the body", i, a)
				}
			}
		})
	}
}
