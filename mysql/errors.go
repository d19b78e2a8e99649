package mysql

import (
	"errors"

	gomysql "github.com/go-sql-driver/mysql"

	idriver "github.com/idemledger/idemledger/driver"
)

// Server error numbers (MySQL 8.0 and MariaDB error references).
const (
	erDupEntry          = 1062 // ER_DUP_ENTRY: read by Claim, never returned
	erLockWaitTimeout   = 1205 // ER_LOCK_WAIT_TIMEOUT: the statement waited innodb_lock_wait_timeout
	erLockDeadlock      = 1213 // ER_LOCK_DEADLOCK: InnoDB rolled the transaction back
	erNoSuchTable       = 1146 // ER_NO_SUCH_TABLE
	erConCount          = 1040 // ER_CON_COUNT_ERROR: too many connections
	erServerShutdown    = 1053 // ER_SERVER_SHUTDOWN
	erConnectionKilled  = 1927 // ER_CONNECTION_KILLED (MariaDB)
	erClientInteraction = 4031 // ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8.0.24+): the server closed an idle connection
)

// interpret marks err with the driver sentinels it matches: a deadlock is
// retryable (InnoDB rolled the whole transaction back; a new run may win),
// a lock wait that timed out or a server out of connections busy, a
// missing table not migrated, and a connection lost or killed, or a server
// shutting down, an unknown outcome.
func interpret(err error) error {
	if err == nil {
		return nil
	}
	var my *gomysql.MySQLError
	if errors.As(err, &my) {
		switch my.Number {
		case erLockDeadlock:
			return idriver.Mark(err, idriver.ErrRetryable)
		case erLockWaitTimeout, erConCount:
			return idriver.Mark(err, idriver.ErrBusy)
		case erNoSuchTable:
			return idriver.Mark(err, idriver.ErrNotMigrated)
		case erServerShutdown, erConnectionKilled, erClientInteraction:
			return idriver.Mark(err, idriver.ErrOutcomeUnknown)
		}
		return err
	}
	if errors.Is(err, gomysql.ErrInvalidConn) || idriver.ConnectionLost(err) {
		return idriver.Mark(err, idriver.ErrOutcomeUnknown)
	}
	return err
}
