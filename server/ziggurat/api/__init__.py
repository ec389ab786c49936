"""The API edge: the gRPC servicers and what stands in front of them — credentials and access,
rate limits and call guards, statuses that never leak an internal error, the competition policy,
the remote-bot registry and the server's own built-in bots.

It turns calls into the match core's operations (:mod:`ziggurat.core`) and knows nothing of how
the server is hosted (:mod:`ziggurat.hosting`), which hands it what it needs (a lister of every
worker's matches, for one).
"""
