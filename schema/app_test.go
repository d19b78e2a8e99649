package schema_test

import "embed"

// appMigrations stands for an application's own golang-migrate migrations.
//
//go:embed testdata/app/*.sql
var appMigrations embed.FS
