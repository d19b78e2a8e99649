-- Nothing to undo: migration 9 changes nothing on this engine.
SELECT 1;
