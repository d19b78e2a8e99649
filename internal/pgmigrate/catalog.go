package pgmigrate

import (
	"fmt"

	"github.com/idemledger/idemledger/schema"
)

// TableExistsSQL is the PostgreSQL drivers' catalog read behind
// driver.Executor.TableExists: whether a table named $1 is in a schema of
// the search_path (where the ledger's unqualified statements find it),
// whether the session has a current schema at all, and the search_path,
// for the error when it has none. It reads pg_catalog only.
const TableExistsSQL = `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_tables WHERE tablename = $1 AND schemaname = ANY (current_schemas(false))),
	current_schema() IS NOT NULL, current_setting('search_path')`

// ColumnExistsSQL is the catalog read behind
// driver.Executor.ColumnExists: whether the table named $1, as an
// unqualified name resolves on the search_path, has a live column $2.
const ColumnExistsSQL = `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid
	WHERE c.oid = to_regclass(quote_ident($1)) AND c.relkind IN ('r', 'p') AND a.attname = $2 AND a.attnum > 0 AND NOT a.attisdropped)`

// TableExists is the answer of [TableExistsSQL]'s row: found, or an error
// matching [schema.ErrNoCurrentSchema] when no schema of the search_path
// exists, so that a tool can say what to create.
func TableExists(found, hasSchema bool, searchPath string) (bool, error) {
	if !found && !hasSchema {
		return false, fmt.Errorf("%w (search_path: %s)", schema.ErrNoCurrentSchema, searchPath)
	}
	return found, nil
}
