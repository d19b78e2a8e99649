package schema

import (
	"context"
	"database/sql"
	"fmt"
)

// checkArgs refuses the nil context or nil database that golang-migrate
// and database/sql would panic on, with an error wrapped like the rest of
// op's ("schema: migrate: nil context"). Every exported function that
// takes them calls it first.
func checkArgs(ctx context.Context, db *sql.DB, op string) error {
	switch {
	case ctx == nil:
		return fmt.Errorf("schema: %s: nil context", op)
	case db == nil:
		return fmt.Errorf("schema: %s: nil *sql.DB", op)
	}
	return nil
}
