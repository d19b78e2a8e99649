package ledger_test

import (
	"bufio"
	"bytes"
	"sync"
)

// jsonBuffer collects a worker's stdout and finds its "RESULT " line among
// the test framework's own output.
type jsonBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *jsonBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *jsonBuffer) result() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	sc := bufio.NewScanner(bytes.NewReader(b.buf.Bytes()))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line, ok := bytes.CutPrefix(sc.Bytes(), []byte("RESULT ")); ok {
			return bytes.Clone(line)
		}
	}
	return nil
}
