package faultnet

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/url"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// postgresEnv names the server the PostgreSQL tests run against; it is the
// variable internal/testdb reads, repeated here so this package does not
// import the drivers testdb pulls in.
const postgresEnv = "IDEMLEDGER_TEST_POSTGRES"

func TestPointString(t *testing.T) {
	for p, want := range map[Point]string{
		BeforeRequest: "before request", AfterRequest: "after request",
		MidReply: "mid reply", 0: "Point(0)",
	} {
		if got := p.String(); got != want {
			t.Errorf("Point(%d).String() = %q, want %q", int(p), got, want)
		}
	}
}

// TestScan feeds a stream to scan in every two- and three-chunk split and
// checks the marker is found exactly in the chunk holding its last byte.
func TestScan(t *testing.T) {
	marker := []byte("cut-42")
	stream := []byte("Bxx\x00cut-42\x00yy")
	last := bytes.Index(stream, marker) + len(marker) - 1 // index of the marker's last byte
	feed := func(chunks [][]byte) int {                   // index of the matching chunk, -1 if none
		var tail []byte
		for i, c := range chunks {
			var hit bool
			if hit, tail = scan(tail, c, marker); hit {
				return i
			}
		}
		return -1
	}
	for i := 0; i <= len(stream); i++ {
		for j := i; j <= len(stream); j++ {
			chunks := [][]byte{stream[:i], stream[i:j], stream[j:]}
			want := 2
			switch {
			case last < i:
				want = 0
			case last < j:
				want = 1
			}
			if got := feed(chunks); got != want {
				t.Errorf("chunks %q: match in chunk %d, want %d", chunks, got, want)
			}
		}
	}
	for _, tc := range []struct {
		name   string
		chunks []string
	}{
		{"interrupted", []string{"cut-", "x42"}},
		{"prefix only", []string{"xxcut-4"}},
		{"suffix only", []string{"ut-42"}},
		{"one byte chunks missing one", []string{"c", "u", "t", "-", "4"}},
	} {
		var chunks [][]byte
		for _, c := range tc.chunks {
			chunks = append(chunks, []byte(c))
		}
		if got := feed(chunks); got != -1 {
			t.Errorf("%s: match in chunk %d, want none", tc.name, got)
		}
	}
	// A tail kept for a longer marker is trimmed to the current one: a
	// match wholly inside the previous chunk is not blamed on this one.
	if hit, _ := scan([]byte("xxab"), []byte("zz"), []byte("ab")); hit {
		t.Error("scan matched inside a stale tail")
	}
}

func TestHasReadyForQuery(t *testing.T) {
	z := []byte{'Z', 0, 0, 0, 5, 'I'}
	bindComplete := []byte{'2', 0, 0, 0, 4}
	cmd := append([]byte{'C', 0, 0, 0, 15}, "INSERT 0 1\x00"...)
	cat := func(bs ...[]byte) []byte { return bytes.Join(bs, nil) }
	for _, tc := range []struct {
		name string
		b    []byte
		want bool
	}{
		{"empty", nil, false},
		{"ready alone", z, true},
		{"full reply", cat(bindComplete, cmd, z), true},
		{"ready truncated", cat(bindComplete, cmd, z[:5]), false},
		{"command only", cat(bindComplete, cmd), false},
		{"command truncated", cat(bindComplete, cmd[:8]), false},
		{"Z inside a payload", append([]byte{'C', 0, 0, 0, 10}, z...), false},
		{"not postgres", []byte("HTTP/1.1 200 OK\r\n"), false},
		{"bad length", []byte{'Z', 0, 0, 0, 0, 'Z', 0, 0, 0, 5, 'I'}, false},
	} {
		if got := hasReadyForQuery(tc.b); got != tc.want {
			t.Errorf("%s: hasReadyForQuery(%q) = %v, want %v", tc.name, tc.b, got, tc.want)
		}
	}
}

func TestListenRejectsNonLoopback(t *testing.T) {
	for _, target := range []string{"192.0.2.1:5432", "example.com:5432", "127.0.0.1"} {
		if p, err := Listen(target); err == nil {
			p.Close()
			t.Errorf("Listen(%q) succeeded, want an error", target)
		}
	}
}

// fakeServer is a target that answers each read with reply(bytes read).
// It returns its address and a channel that receives nil when a
// connection reads EOF, proof the proxy closed its side.
func fakeServer(t *testing.T, reply func([]byte) []byte) (string, <-chan error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 16)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns []net.Conn
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				buf := make([]byte, 4096)
				for {
					n, err := c.Read(buf)
					if err == io.EOF {
						err = nil
					}
					if err != nil || n == 0 {
						ended <- err
						return
					}
					c.Write(reply(buf[:n]))
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return ln.Addr().String(), ended
}

// TestCloseClosesEverything checks Close cuts both halves of an open
// connection, refuses new ones, is safe twice and leaves no goroutine.
func TestCloseClosesEverything(t *testing.T) {
	target, ended := fakeServer(t, echo)
	before := runtime.NumGoroutine()
	func() {
		p, err := Listen(target)
		if err != nil {
			t.Fatal(err)
		}
		client, err := net.Dial("tcp", p.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		roundTrip(t, client, "ping", "ping")
		if err := p.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if err := p.Close(); err != nil {
			t.Fatalf("second Close: %v", err)
		}
		expectEOF(t, "client side", client)
		select {
		case err := <-ended:
			if err != nil {
				t.Errorf("server side after Close: %v, want EOF", err)
			}
		case <-time.After(5 * time.Second):
			t.Error("server side still open 5s after Close")
		}
		if c, err := net.Dial("tcp", p.Addr()); err == nil {
			c.Close()
			t.Error("dial after Close succeeded")
		}
	}()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines after Close, %d before:\n%s", n, before, buf[:runtime.Stack(buf, true)])
	}
}

// echo makes fakeServer an echo server, a target that never sends
// ReadyForQuery.
func echo(b []byte) []byte { return b }

// pgReply makes fakeServer answer like PostgreSQL to Bind/Execute/Sync:
// BindComplete, CommandComplete "INSERT 0 1", ReadyForQuery: 27 bytes.
func pgReply([]byte) []byte {
	return []byte("2\x00\x00\x00\x04C\x00\x00\x00\x0fINSERT 0 1\x00Z\x00\x00\x00\x05I")
}

// TestCutWithoutPostgres checks, byte for byte, what the client receives
// at each point: nothing before or after the request, the first half of
// the reply mid-reply. A PostgreSQL-framed reply is cut as soon as
// ReadyForQuery arrives; any other waits for the reply timeout.
func TestCutWithoutPostgres(t *testing.T) {
	full := string(pgReply(nil))
	for _, tc := range []struct {
		name    string
		reply   func([]byte) []byte
		at      Point
		want    string
		timeout bool // whether the cut must wait for the reply timeout
	}{
		{"echo", echo, BeforeRequest, "", false},
		{"echo", echo, AfterRequest, "", true},
		{"echo", echo, MidReply, "hello", true},
		{"postgres", pgReply, AfterRequest, "", false},
		{"postgres", pgReply, MidReply, full[:13], false},
	} {
		t.Run(tc.name+" "+tc.at.String(), func(t *testing.T) {
			target, ended := fakeServer(t, tc.reply)
			p, err := Listen(target)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			timeout := 500 * time.Millisecond
			p.replyTimeout = timeout // before any connection: no race
			client, err := net.Dial("tcp", p.Addr())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			roundTrip(t, client, "plain", string(tc.reply([]byte("plain")))) // unmatched: untouched
			p.Arm([]byte("MARK"), tc.at)
			if p.Fired() {
				t.Error("Fired() = true before the marked chunk")
			}
			start := time.Now()
			if _, err := client.Write([]byte("helloMARK!")); err != nil {
				t.Fatal(err)
			}
			client.SetReadDeadline(time.Now().Add(5 * time.Second))
			got, err := io.ReadAll(client)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			if string(got) != tc.want {
				t.Errorf("client got %q, want %q", got, tc.want)
			}
			if waited := time.Since(start) >= timeout; waited != tc.timeout {
				t.Errorf("cut after %v; want timeout-bound = %v", time.Since(start), tc.timeout)
			}
			if !p.Fired() {
				t.Error("Fired() = false after the cut")
			}
			select {
			case <-ended:
			case <-time.After(5 * time.Second):
				t.Error("server side still open 5s after the cut")
			}
		})
	}
}

func roundTrip(t *testing.T, c net.Conn, msg, want string) {
	t.Helper()
	if _, err := c.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, len(want))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("round trip: got %q, %v; want %q", got, err, want)
	}
	c.SetReadDeadline(time.Time{})
}

func expectEOF(t *testing.T, side string, c net.Conn) {
	t.Helper()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := c.Read(make([]byte, 1)); n != 0 || !errors.Is(err, io.EOF) {
		t.Errorf("%s: read %d, %v; want EOF", side, n, err)
	}
}

// pg is a PostgreSQL test fixture: a proxy in front of the server, a
// direct connection for setup and assertions, and a scratch table.
type pg struct {
	t      *testing.T
	proxy  *Proxy
	direct *pgx.Conn
	viaURL string // the connection string, pointed at the proxy
	table  string
}

func newPG(t *testing.T) *pg {
	t.Helper()
	dsn := os.Getenv(postgresEnv)
	if dsn == "" {
		t.Skip("PostgreSQL tests skipped: set " + postgresEnv +
			" (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run them")
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("%s: %v", postgresEnv, err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	proxy, err := Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	ctx := context.Background()
	direct, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("direct connection: %v", err)
	}
	table := "faultnet_" + random()
	if _, err := direct.Exec(ctx, "CREATE TABLE "+table+" (v text NOT NULL)"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := direct.Exec(ctx, "DROP TABLE "+table); err != nil {
			t.Errorf("drop %s: %v", table, err)
		}
		direct.Close(ctx)
	})
	u.Host = proxy.Addr()
	return &pg{t: t, proxy: proxy, direct: direct, viaURL: u.String(), table: table}
}

// connect opens a connection through the proxy.
func (g *pg) connect() *pgx.Conn {
	g.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, g.viaURL)
	if err != nil {
		g.t.Fatalf("connect through the proxy: %v", err)
	}
	g.t.Cleanup(func() { c.Close(context.Background()) })
	return c
}

// insert runs the statement under test: the value travels as a Bind
// parameter, so a marker inside it matches only that request.
func (g *pg) insert(c *pgx.Conn, v string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := c.Exec(ctx, "INSERT INTO "+g.table+"(v) VALUES ($1)", v)
	return err
}

// rows counts the rows holding v, over the direct connection.
func (g *pg) rows(v string) int {
	g.t.Helper()
	var n int
	err := g.direct.QueryRow(context.Background(),
		"SELECT count(*) FROM "+g.table+" WHERE v = $1", v).Scan(&n)
	if err != nil {
		g.t.Fatal(err)
	}
	return n
}

func random() string {
	b := make([]byte, 8)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// TestCut cuts a real INSERT at each point and checks exactly what the
// server kept: nothing before the request, the row after it or mid-reply.
func TestCut(t *testing.T) {
	for _, tc := range []struct {
		at   Point
		rows int
	}{{BeforeRequest, 0}, {AfterRequest, 1}, {MidReply, 1}} {
		t.Run(tc.at.String(), func(t *testing.T) {
			g := newPG(t)
			c := g.connect()
			marker := "cut-" + strings.ReplaceAll(tc.at.String(), " ", "-") + "-" + random()
			g.proxy.Arm([]byte(marker), tc.at)

			other := "pass-" + random() // armed, but this value lacks the marker
			if err := g.insert(c, other); err != nil {
				t.Fatalf("unmarked insert: %v", err)
			}
			if n := g.rows(other); n != 1 {
				t.Fatalf("unmarked insert: %d rows, want 1", n)
			}
			if g.proxy.Fired() {
				t.Fatal("Fired() = true before the marked statement")
			}

			if err := g.insert(c, marker); err == nil {
				t.Fatal("marked insert succeeded, want a connection error")
			}
			if !g.proxy.Fired() {
				t.Error("Fired() = false after the cut")
			}
			if n := g.rows(marker); n != tc.rows {
				t.Errorf("%d rows hold the marker after a cut %s, want %d", n, tc.at, tc.rows)
			}
			if !c.IsClosed() {
				t.Error("the cut connection is still open")
			}

			// One-shot: a retry on a new connection goes through.
			if err := g.insert(g.connect(), marker); err != nil {
				t.Fatalf("retry after the cut: %v", err)
			}
			if n := g.rows(marker); n != tc.rows+1 {
				t.Errorf("%d rows after the retry, want %d", n, tc.rows+1)
			}
		})
	}
}

// TestUnmatchedPassesUntouched sends a value larger than one read through
// an armed proxy and gets it back byte for byte; after Disarm even the
// marker passes.
func TestUnmatchedPassesUntouched(t *testing.T) {
	g := newPG(t)
	c := g.connect()
	marker := "cut-" + random()
	g.proxy.Arm([]byte(marker), BeforeRequest)
	big := strings.Repeat("0123456789abcdef", 16<<10) // 256 KiB, many chunks each way
	var got string
	ctx := context.Background()
	if err := c.QueryRow(ctx, "SELECT $1::text", big).Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != big {
		t.Errorf("round trip changed the value (len %d, want %d)", len(got), len(big))
	}
	g.proxy.Disarm()
	if err := g.insert(c, marker); err != nil {
		t.Fatalf("insert after Disarm: %v", err)
	}
	if n := g.rows(marker); n != 1 || g.proxy.Fired() {
		t.Errorf("after Disarm: %d rows, Fired() = %v; want 1, false", n, g.proxy.Fired())
	}
}

// TestDropAll checks an open connection fails its next statement after
// DropAll while a new connection through the proxy works.
func TestDropAll(t *testing.T) {
	g := newPG(t)
	old := g.connect()
	if err := g.insert(old, "before-"+random()); err != nil {
		t.Fatal(err)
	}
	g.proxy.DropAll()
	lost := "lost-" + random()
	if err := g.insert(old, lost); err == nil {
		t.Fatal("statement on a dropped connection succeeded")
	}
	if n := g.rows(lost); n != 0 {
		t.Errorf("%d rows from the dropped connection, want 0", n)
	}
	fresh := "fresh-" + random()
	if err := g.insert(g.connect(), fresh); err != nil {
		t.Fatalf("new connection after DropAll: %v", err)
	}
	if n := g.rows(fresh); n != 1 {
		t.Errorf("%d rows from the new connection, want 1", n)
	}
}

// TestSilence checks that a silent proxy holds bytes both ways, on an open
// connection and on one dialled during the silence, without closing
// either, and that Resume delivers them in order; a client that closes
// while silent reaches the server only after its held bytes.
func TestSilence(t *testing.T) {
	target, ended := fakeServer(t, func(b []byte) []byte { return append([]byte("re:"), b...) })
	p, err := Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	open, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	roundTrip(t, open, "a", "re:a")

	p.Silence()
	p.Silence() // twice is once
	late, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatalf("dial while silent: %v", err)
	}
	defer late.Close()
	for _, c := range []net.Conn{open, late} {
		if _, err := c.Write([]byte("b")); err != nil {
			t.Fatal(err)
		}
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		n, err := c.Read(make([]byte, 8))
		var ne net.Error
		if n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("read while silent: %d bytes, %v; want a timeout and nothing", n, err)
		}
		c.SetReadDeadline(time.Time{})
	}
	select {
	case err := <-ended:
		t.Fatalf("a server side ended while silent: %v", err)
	default:
	}

	p.Resume()
	p.Resume() // twice is once
	for _, c := range []net.Conn{open, late} {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		got := make([]byte, 4)
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "re:b" {
			t.Fatalf("after Resume: %q, %v; want %q", got, err, "re:b")
		}
		c.SetReadDeadline(time.Time{})
	}
	roundTrip(t, open, "c", "re:c")

	// A close while silent: the server reads the held byte, then EOF, or
	// a reset when its reply to that byte found the client gone first
	// (which of the two is a race of the proxy's two directions).
	p.Silence()
	if _, err := late.Write([]byte("d")); err != nil {
		t.Fatal(err)
	}
	late.Close()
	time.Sleep(100 * time.Millisecond)
	select {
	case err := <-ended:
		t.Fatalf("the server side of a closed link ended while silent: %v", err)
	default:
	}
	p.Resume()
	select {
	case err := <-ended:
		if err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("server side after Resume: %v, want EOF or a reset", err)
		}
	case <-time.After(5 * time.Second):
		t.Error("server side still open 5s after Resume")
	}
}

// TestHold checks that a Hold cut silences the proxy from the matched
// chunk on, that chunk included, and that Resume delivers it.
func TestHold(t *testing.T) {
	target, _ := fakeServer(t, echo)
	p, err := Listen(target)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	roundTrip(t, c, "before", "before")
	p.Arm([]byte("mark"), Hold)
	if _, err := c.Write([]byte("the mark")); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, err := c.Read(make([]byte, 8)); n != 0 || err == nil {
		t.Fatalf("read while held: %d bytes, %v; want nothing", n, err)
	}
	if !p.Fired() {
		t.Fatal("Fired is false after the marker went by")
	}
	p.Resume()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	got := make([]byte, 8)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "the mark" {
		t.Fatalf("after Resume: %q, %v", got, err)
	}
	if s := Hold.String(); s != "hold" {
		t.Errorf("Hold.String() = %q", s)
	}
}
