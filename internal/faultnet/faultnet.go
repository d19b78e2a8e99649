// Package faultnet is a TCP proxy for tests that cuts real database
// connections at chosen moments: fakes cannot show what a client library
// does when a connection to a real PostgreSQL drops before a request,
// after it (the server ran the statement, the reply is lost) or mid-reply.
// It can also fall silent (Silence): every byte is held, none is lost and
// no connection is reset, as when a network path stops delivering packets,
// until Resume delivers what was held, in order.
package faultnet

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Point says where a cut happens relative to the matched request.
type Point int

// The three points are the three outcomes a client must tell apart: the
// statement did not run, it ran but the reply was lost, or the reply
// broke off part way.
const (
	BeforeRequest Point = iota + 1 // the matched chunk is never forwarded: the statement did not run
	AfterRequest                   // the reply is awaited and discarded: the statement ran, the client never learns it
	MidReply                       // a strict prefix of the reply (≥1 byte when possible) reaches the client
	// Hold makes the proxy silent (see Silence) from the matched chunk
	// on, that chunk included: the request is held on its way, the
	// connection stays open, and Resume delivers it.
	Hold
)

// String names the point for test names and failure messages.
func (p Point) String() string {
	if p >= BeforeRequest && p <= Hold {
		return [...]string{"before request", "after request", "mid reply", "hold"}[p-1]
	}
	return fmt.Sprintf("Point(%d)", int(p))
}

// replyTimeout bounds how long AfterRequest and MidReply wait for a
// complete reply; it only matters when the target does not speak the
// PostgreSQL protocol, or the server hangs.
const replyTimeout = 5 * time.Second

// Proxy forwards loopback TCP connections to one target and cuts them when
// an armed marker goes by. All methods are safe for concurrent use.
type Proxy struct {
	target       string
	ln           net.Listener
	replyTimeout time.Duration // a field so in-package tests can shorten it
	settle       time.Duration // see SetSettle; 0 reads PostgreSQL framing
	wg           sync.WaitGroup

	mu     sync.Mutex
	marker []byte         // the armed marker, nil when none (or once matched)
	at     Point          // where the armed cut happens
	gen    uint64         // bumped by Arm, so a stale cut cannot set fired
	fired  bool           // the cut armed in generation gen has happened
	links  map[*link]bool // open proxied connections, for DropAll and Close
	closed bool
	// quiet is non-nil while the proxy is silent; Resume closes it.
	quiet chan struct{}
}

// link is one proxied connection: the accepted client side and the dialled
// server side.
type link struct {
	p              *Proxy
	client, server net.Conn
	once           sync.Once
	done           chan struct{} // closed by close, to wake a pump held by Silence

	mu  sync.Mutex // guards at and gen, set by clientToServer on a match
	at  Point      // the cut under way, 0 for none
	gen uint64     // the Arm generation of that cut
}

// Listen listens on 127.0.0.1:0 and forwards each accepted connection to
// target (host:port). The target must be on loopback: the proxy is a test
// tool and must never be pointed at a shared server by mistake.
func Listen(target string) (*Proxy, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("faultnet: target %q: %w", target, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("faultnet: target %q is not a loopback address", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("faultnet: %w", err)
	}
	p := &Proxy{target: target, ln: ln, replyTimeout: replyTimeout, links: map[*link]bool{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// SetSettle makes the proxy judge a reply complete, for [AfterRequest] and
// [MidReply], once its first bytes came and then none for d, instead of by
// PostgreSQL's framing: for targets whose protocol it does not read
// (MySQL), whose replies on loopback arrive at once. Call it before Arm.
func (p *Proxy) SetSettle(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.settle = d
}

// Addr returns the address clients dial instead of the target.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Arm makes the next client->server chunk, on any connection, that
// contains marker trigger a cut at the given point. It is one-shot so a
// retry by the client under test goes through; re-arming replaces an
// unfired plan and resets Fired.
func (p *Proxy) Arm(marker []byte, at Point) {
	if len(marker) == 0 || at < BeforeRequest || at > Hold {
		panic("faultnet: Arm needs a marker and a valid Point")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker, p.at = bytes.Clone(marker), at
	p.gen++
	p.fired = false
}

// Disarm drops an unfired plan; a cut already under way still completes.
func (p *Proxy) Disarm() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker = nil
}

// Fired reports whether the cut armed by the last Arm has happened, so a
// test can tell "the client failed because of the cut" from "the cut never
// matched".
func (p *Proxy) Fired() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fired
}

// DropAll closes every open proxied connection at once (both sides), like
// a pooler or server restart; new connections are still accepted.
func (p *Proxy) DropAll() {
	p.mu.Lock()
	links := make([]*link, 0, len(p.links))
	for l := range p.links {
		links = append(links, l)
	}
	p.mu.Unlock()
	for _, l := range links { // outside p.mu: close takes it
		l.close()
	}
}

// Silence makes the proxy hold every byte it receives, in both directions
// and on every connection, new ones included (their TCP handshake
// completes, as the kernel answers it, but nothing more), until Resume:
// nothing is dropped and no connection is reset or closed, so a client
// sees a peer that has gone quiet, and only its own deadlines end the
// wait. A connection that the client closes meanwhile is closed towards
// the server only after the bytes held before the close are delivered.
// Silence while silent does nothing.
func (p *Proxy) Silence() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quiet == nil {
		p.quiet = make(chan struct{})
	}
}

// Resume ends a Silence: the bytes held are delivered, in the order they
// came, and the proxy forwards as before. Resume when not silent does
// nothing.
func (p *Proxy) Resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.quiet != nil {
		close(p.quiet)
		p.quiet = nil
	}
}

// hold returns once the proxy is not silent, or false once the link is
// closed.
func (l *link) hold() bool {
	l.p.mu.Lock()
	quiet := l.p.quiet
	l.p.mu.Unlock()
	if quiet == nil {
		return true
	}
	select {
	case <-quiet:
		return true
	case <-l.done:
		return false
	}
}

// Close stops listening, closes both sides of every connection and waits
// for all the proxy's goroutines to end. It is safe to call twice.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.DropAll()
	p.Resume()
	p.wg.Wait()
	return err
}

// accept runs until the listener is closed.
func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed; tests never exhaust file descriptors
		}
		// A loopback dial answers at once, so Close never waits long here.
		server, err := net.DialTimeout("tcp", p.target, replyTimeout)
		if err != nil {
			client.Close() // the client sees the target's refusal as EOF
			continue
		}
		l := &link{p: p, client: client, server: server, done: make(chan struct{})}
		p.mu.Lock()
		if p.closed { // Close already ran DropAll; do not start pumps it would miss
			p.mu.Unlock()
			client.Close()
			server.Close()
			return
		}
		p.links[l] = true
		p.wg.Add(2) // under p.mu, so never after Close's Wait has begun
		p.mu.Unlock()
		go l.clientToServer()
		go l.serverToClient()
	}
}

// close closes both halves of the link and forgets it.
func (l *link) close() {
	l.once.Do(func() {
		close(l.done)
		l.client.Close()
		l.server.Close()
		l.p.mu.Lock()
		delete(l.p.links, l)
		l.p.mu.Unlock()
	})
}

// match disarms the proxy and returns the cut's point and generation when
// chunk (after the tail of this connection's previous chunks) contains the
// armed marker; otherwise it returns 0.
func (p *Proxy) match(tail *[]byte, chunk []byte) (Point, uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.marker == nil {
		*tail = nil
		return 0, 0
	}
	var hit bool
	if hit, *tail = scan(*tail, chunk, p.marker); !hit {
		return 0, 0
	}
	p.marker = nil // one-shot
	return p.at, p.gen
}

// fire records that the cut of generation gen happened, unless the test
// re-armed meanwhile.
func (p *Proxy) fire(gen uint64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if gen == p.gen {
		p.fired = true
	}
}

// scan reports whether marker occurs in tail+chunk, and returns the tail
// to keep for the next chunk: the last len(marker)-1 bytes seen, so a
// marker split across two reads still matches. The tail is trimmed to the
// current marker first, so a match lying wholly in an earlier chunk (after
// re-arming with a shorter marker) is not blamed on this one.
func scan(tail, chunk, marker []byte) (bool, []byte) {
	keep := len(marker) - 1
	if len(tail) > keep {
		tail = tail[len(tail)-keep:]
	}
	window := append(bytes.Clone(tail), chunk...)
	if bytes.Contains(window, marker) {
		return true, nil
	}
	if len(window) > keep {
		window = window[len(window)-keep:]
	}
	return false, bytes.Clone(window)
}

// clientToServer pumps client bytes to the server and applies a matched
// cut to the chunk that carried the marker.
func (l *link) clientToServer() {
	defer l.p.wg.Done()
	var tail []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := l.client.Read(buf)
		if !l.hold() {
			return
		}
		at, gen := l.p.match(&tail, buf[:n])
		if at == Hold {
			l.p.Silence()
			l.p.fire(gen)
			if !l.hold() {
				return
			}
			at = 0
		}
		switch at {
		case BeforeRequest:
			l.p.fire(gen) // before closing, so the client's error implies Fired
			l.close()
			return
		case AfterRequest, MidReply:
			// Hand the reply to serverToClient before the server can answer;
			// it cuts the link once the reply is complete.
			l.mu.Lock()
			l.at, l.gen = at, gen
			l.mu.Unlock()
			l.server.SetReadDeadline(time.Now().Add(l.p.replyTimeout))
		}
		if _, werr := l.server.Write(buf[:n]); werr != nil || err != nil {
			l.close()
			return
		}
		if at != 0 {
			return // forward nothing more: serverToClient is about to cut
		}
	}
}

// serverToClient pumps server bytes to the client; once a cut is set it
// collects the reply instead and finishes the cut.
func (l *link) serverToClient() {
	defer l.p.wg.Done()
	defer l.close()
	var reply []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := l.server.Read(buf)
		if !l.hold() {
			return
		}
		l.mu.Lock()
		at, gen := l.at, l.gen
		l.mu.Unlock()
		if at == 0 {
			if _, werr := l.client.Write(buf[:n]); werr != nil || err != nil {
				return
			}
			continue
		}
		// The client sent nothing since its previous reply was complete
		// (PostgreSQL clients wait for ReadyForQuery unless pipelining),
		// so every byte read now belongs to the matched request's reply.
		reply = append(reply, buf[:n]...)
		l.p.mu.Lock()
		settle := l.p.settle
		l.p.mu.Unlock()
		if settle > 0 {
			var ne net.Error
			if len(reply) > 0 && errors.As(err, &ne) && ne.Timeout() {
				err = nil // settled: the reply is complete
			} else if err == nil {
				l.server.SetReadDeadline(time.Now().Add(settle))
				continue
			}
		} else if err == nil && !hasReadyForQuery(reply) {
			continue
		}
		// Complete, timed out or closed by the server: cut now.
		if at == MidReply {
			l.client.Write(reply[:len(reply)/2]) // strict prefix, ≥1 byte if the reply has 2
		}
		l.p.fire(gen)
		return // the deferred close cuts both sides
	}
}

// hasReadyForQuery reports whether b, server bytes starting at a message
// boundary, holds a complete ReadyForQuery message. PostgreSQL ends the
// reply to every Sync (extended protocol) or Query (simple protocol) with
// ReadyForQuery, sent once the implicit transaction has committed, so it
// proves the statement ran. Backend messages are framed as 1 type byte
// plus an int32 big-endian length that counts itself but not the type;
// ReadyForQuery is 'Z', length 5, then a status byte. See the PostgreSQL
// documentation, "Message Formats" (protocol-message-formats.html),
// ReadyForQuery (B). Bytes that do not parse as that framing never match,
// so a non-PostgreSQL target waits for the reply timeout.
func hasReadyForQuery(b []byte) bool {
	for len(b) >= 5 {
		n := uint64(binary.BigEndian.Uint32(b[1:5]))
		if n < 4 {
			return false // not PostgreSQL framing
		}
		if uint64(len(b)) < 1+n {
			return false // message still incomplete
		}
		if b[0] == 'Z' && n == 5 {
			return true
		}
		b = b[1+n:]
	}
	return false
}
