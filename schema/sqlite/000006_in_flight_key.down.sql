-- Nothing to undo: migration 6 changes nothing on this engine.
SELECT 1;
