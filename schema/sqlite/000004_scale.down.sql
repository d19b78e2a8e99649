DROP INDEX IF EXISTS idemledger_ledger_created_at;
DROP INDEX IF EXISTS idemledger_ledger_in_flight;
