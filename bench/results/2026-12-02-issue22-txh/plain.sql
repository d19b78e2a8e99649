SELECT status, headers, body FROM idempotency_ledger WHERE scope = $1 AND key = $2;
