module github.com/ziggurat-games/ziggurat/server/gate/conformance

go 1.24.0

require (
	golang.org/x/net v0.46.1-0.20251013234738-63d1a5100f82
	google.golang.org/genproto/googleapis/rpc v0.0.0-20251022142026-3a174f9686a8
	google.golang.org/grpc v1.77.0
	google.golang.org/protobuf v1.36.12
)

require (
	golang.org/x/sys v0.37.0 // indirect
	golang.org/x/text v0.30.0 // indirect
)
