module github.com/idemledger/idemledger/bench

go 1.26.0

replace github.com/idemledger/idemledger => ../

require (
	github.com/cyberphone/json-canonicalization v0.0.0-20241213102144-19d51d7fe467
	github.com/go-json-experiment/json v1.27.2
	github.com/gowebpki/jcs v1.0.2
	github.com/idemledger/idemledger v0.0.0-00010101000000-000000000000
	golang.org/x/perf v0.0.0-20260908200009-22c9c6c9d4da
)

require github.com/aclements/go-moremath v0.0.0-20210112150236-f10218a38794 // indirect

tool golang.org/x/perf/cmd/benchstat
