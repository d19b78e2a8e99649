module github.com/idemledger/idemledger

go 1.26.0
