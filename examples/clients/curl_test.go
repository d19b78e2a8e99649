package clients_test

import (
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemledger/idemledger/examples/internal/testledger"
	"github.com/idemledger/idemledger/idemhttp"
)

// curlPost runs curl with the retry flags and returns its output: the
// status code and the body, as "-w" writes them.
func curlPost(t *testing.T, url, key string, flags ...string) string {
	t.Helper()
	args := append([]string{"-sS", "-o", "-", "-w", " %{http_code}", "-X", "POST",
		"-H", "Content-Type: application/json", "-H", idemhttp.HeaderName + ": " + key,
		"--data", `{"amount":1250}`}, flags...)
	out, err := exec.Command("curl", append(args, url)...).CombinedOutput()
	if err != nil && !strings.Contains(string(out), " 4") && !strings.Contains(string(out), " 5") {
		t.Fatalf("curl: %v\n%s", err, out)
	}
	return string(out)
}

// TestCurlRetry: curl's --retry retries 408, 429, 500, 502, 503 and 504,
// not the in-flight 409, so a duplicate of a running request ends with
// 409; --retry-all-errors with --fail retries it too and ends with the
// stored answer, but retries the final 400, 410 and 422 as well
// (TestCurlRetryFlags), which is why docs/clients.md recommends Options.Wait
// instead (TestWaitingDuplicates). On every driver. .ci/run installs curl where it is
// missing.
func TestCurlRetry(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("curl is not installed (apt-get install curl)")
	}
	testledger.Each(t, func(t *testing.T, engine string) {
		s := &shop{delay: 700 * time.Millisecond, status: 201, body: func(n int64) string { return `{"order":1}` }}
		s.start(t, engine, idemhttp.Options{})
		for _, c := range []struct {
			name  string
			flags []string
			want  string // the duplicate's output
		}{
			{"--retry 5", []string{"--retry", "5"}, "409"},
			{"--retry 5 --retry-all-errors --fail", []string{"--retry", "5", "--retry-all-errors", "--fail", "--retry-delay", "1"}, `{"order":1} 201`},
		} {
			key := "curl " + c.name
			var wg sync.WaitGroup
			outs := make([]string, 2)
			for i := range outs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if i == 1 {
						s.waitRunning(key)
					}
					outs[i] = curlPost(t, s.srv.URL, key, c.flags...)
				}()
			}
			wg.Wait()
			if outs[0] != `{"order":1} 201` || !strings.HasSuffix(outs[1], c.want) || s.effectsOf(key) != 1 {
				t.Errorf("%s: first %q, duplicate %q, %d effects; want the duplicate to end with %q, 1 effect", c.name, outs[0], outs[1], s.effectsOf(key), c.want)
			}
		}
	})
}
