package mysql

import (
	"errors"

	gomysql "github.com/go-sql-driver/mysql"

	idriver "github.com/idemledger/idemledger/driver"
	"github.com/idemledger/idemledger/internal/mysqldb"
)

// An outcome travels to the server in one packet (the statement's
// arguments), which the server refuses above its max_allowed_packet with
// 1153 (ER_NET_PACKET_TOO_LARGE) and then closes the connection: the
// outcome is lost, and a retry would send it again to the same refusal.
// The driver reads max_allowed_packet from the server (Prepare) and refuses
// a larger outcome before sending it, as a *driver.TooLargeError; a
// refusal it did not foresee (1153, or go-sql-driver's own limit of the
// DSN's maxAllowedPacket) is reported the same way.

// erNetPacketTooLarge is ER_NET_PACKET_TOO_LARGE.
const erNetPacketTooLarge = 1153

// packetRest is what the packet of the outcome's statement holds besides
// the outcome and the key's arguments: the statement (sent as text when it
// is not prepared), the other arguments, and the protocol's headers,
// rounded up.
var packetRest = int64(len(mysqldb.Complete)) + 1024

// packetSize is the size of the packet that would store p's outcome, as
// counted against max_allowed_packet.
func packetSize(p idriver.CompleteParams) int64 {
	return idriver.OutcomeSize(p) + int64(len(p.Scope)+len(p.Key)+len(p.Token)) + packetRest
}

// checkOutcome returns a *driver.TooLargeError when p's outcome would not
// fit in a packet the server accepts; nil otherwise, or when the server's
// limit is not known yet (Prepare has not read it).
func (d *Driver) checkOutcome(p idriver.CompleteParams) error {
	if limit := d.maxPacket.Load(); limit > 0 {
		if n := packetSize(p); n > limit {
			return &idriver.TooLargeError{Size: n, Limit: limit}
		}
	}
	return nil
}

// tooLarge returns err, the error of the statement that stored p's
// outcome, as a *driver.TooLargeError when the server or go-sql-driver
// refused the packet for its size; err unchanged otherwise.
func (d *Driver) tooLarge(p idriver.CompleteParams, err error) error {
	var my *gomysql.MySQLError
	if errors.Is(err, gomysql.ErrPktTooLarge) || errors.As(err, &my) && my.Number == erNetPacketTooLarge {
		return &idriver.TooLargeError{Size: packetSize(p), Limit: d.maxPacket.Load(), Err: err}
	}
	return err
}
