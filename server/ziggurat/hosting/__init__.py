"""Hosting: the server process and what runs around it — listeners and TLS, worker processes and
their shards, the gate in front, LAN announcement, memory and open-file limits, log rates.

It assembles the match core (:mod:`ziggurat.core`), the API edge (:mod:`ziggurat.api`) and the
web port (:mod:`ziggurat.web`) into ``ziggurat serve``; nothing below it imports it.
"""
