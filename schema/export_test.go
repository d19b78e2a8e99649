package schema

// Run is run, for the external tests that migrate from a file system of
// their own.
var Run = run
