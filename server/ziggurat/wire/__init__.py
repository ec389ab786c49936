"""Translation between the rules layer's values and the protobuf messages of ``ziggurat.v1``.

The codec serialises :class:`ziggurat.rules.core.View` objects only: there is no
function here that accepts an authoritative game state, so the server cannot
send one by accident.
"""
