package idemhttp

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/ledger"
)

// busy reports whether err says that the store works but lost to
// contention, so that a retry shortly may succeed: ledger.ErrRetryable or
// ledger.ErrBusy for the ledger's statements (a lock not free within the
// busy timeout, a serialization failure, a claim whose record kept
// changing), or the driver's ErrRetryable for TxHandler's own BEGIN and
// COMMIT, which the driver marks as it marks every error of its engine.
// idemgrpc draws the same line.
func busy(err error) bool {
	return errors.Is(err, ledger.ErrRetryable) || errors.Is(err, ledger.ErrBusy) || errors.Is(err, driver.ErrRetryable)
}

// refuseBusy answers 503 with Retry-After (CodeBusy): the store works, but
// lost to contention (another writer held its lock past the busy timeout,
// most often), so a retry a little later may well succeed. FailurePolicy does not apply: the store is not
// down, and running the handler unprotected would give up the guarantee
// for a moment's contention.
func (cfg *config) refuseBusy(w http.ResponseWriter, r *http.Request, err error) {
	secs := retryAfterSeconds(cfg.retryAfter, cfg.retryAfter)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	cfg.refuse(w, r, Refusal{Status: http.StatusServiceUnavailable, Code: CodeBusy,
		Detail: "the idempotency store is busy; retry later", RetryAfter: time.Duration(secs) * time.Second, Err: err})
}
