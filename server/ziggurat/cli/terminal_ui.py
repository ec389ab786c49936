"""Whether the terminal UI (``ziggurat play``, ``ziggurat watch``) can run: its extra installed.

Why here and not in each command: the same one line for both, said before anything else runs,
instead of a ModuleNotFoundError's traceback from deep inside textual's import.
"""

from __future__ import annotations

from ziggurat import extras


def missing(command: str) -> str | None:
    """None when ``ziggurat.tui`` imports; else the line that says which extra to install."""
    try:
        import ziggurat.tui  # noqa: F401  (imported for its dependencies, used by the caller)
    except ModuleNotFoundError as error:
        module = extras.missing_from(error, "tui")
        if module is None:
            raise
        return (
            f"error: ziggurat {command} needs the terminal UI, which is not installed "
            f"({module} is missing): {extras.install_hint('tui')}"
        )
    return None
