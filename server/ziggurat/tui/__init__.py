"""A terminal UI (textual) to find servers, join or create matches, play and watch.

Entry points are ``ziggurat play`` and ``ziggurat watch``; see :class:`ZigguratApp`.
"""

from ziggurat.tui.app import ZigguratApp

__all__ = ["ZigguratApp"]
