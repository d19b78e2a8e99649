package mysql

import "time"

// RetryPrepareNow makes the next operation that finds the statements
// missing after a failed Prepare start another at once, as if PrepareRetry
// had passed.
func (d *Driver) RetryPrepareNow() {
	if d.retryAt.Load() != 0 {
		d.retryAt.Store(time.Now().UnixNano())
	}
}

// Prepared reports whether the driver's statements are prepared.
func (d *Driver) Prepared() bool { return d.prepared.Load() != nil }

// ForgetMaxPacket makes the driver forget the server's max_allowed_packet,
// as before Prepare read it, so that an outcome too large is sent.
func (d *Driver) ForgetMaxPacket() { d.maxPacket.Store(0) }
