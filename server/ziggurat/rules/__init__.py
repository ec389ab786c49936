"""Pure game rules: no I/O, no asyncio, no gRPC, no generated protobuf code.

Everything here is deterministic; randomness comes only from a seed the caller
passes (see :mod:`ziggurat.rules.seeding`).
"""
