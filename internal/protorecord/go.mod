module github.com/idemledger/idemledger/internal/protorecord

go 1.26.0

replace github.com/idemledger/idemledger => ../..

require (
	github.com/idemledger/idemledger v0.0.0-00010101000000-000000000000
	google.golang.org/genproto/googleapis/rpc v0.0.0-20261110000943-09e21b237f2c
	google.golang.org/protobuf v1.36.12
)
