"""The authoritative match server: match manager, gRPC servicers and the server process."""
