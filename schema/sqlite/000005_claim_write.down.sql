-- Nothing to undo (see 000005_claim_write.up.sql).
SELECT 1;
