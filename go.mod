module github.com/idemledger/idemledger

go 1.26.0

require (
	github.com/dunglas/httpsfv v1.1.2
	github.com/google/uuid v1.6.0
)
