"""Finding a server this test started, by mDNS on loopback, on a loaded machine.

One 1.5 s browse usually finds it, but with pytest's workers, browsers and bots keeping both
cores busy the answer can come late and the browse ends empty (a CI run at 0 % idle lost one).
A server that is announced must be found, so the positive checks browse again, up to
``scans`` times; the negative checks (``not advertised``, ``said goodbye``) browse once and
call ``discover`` themselves, since retrying them could only hide a failure.
"""

from __future__ import annotations

from ziggurat.tui.discovery import ServerInfo, discover

LOOPBACK = ["127.0.0.1"]


async def discovered(port: int, *, scans: int = 5, seconds: float = 1.5) -> list[ServerInfo]:
    """The servers announced on ``port`` seen on loopback; empty only after ``scans`` browses."""
    found: list[ServerInfo] = []
    for _ in range(scans):
        found = [info for info in await discover(seconds, interfaces=LOOPBACK) if info.port == port]
        if found:
            break
    return found
