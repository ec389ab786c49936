"""Whether the terminal UI (``ziggurat play``, ``ziggurat watch``) can run: its extra installed.

Why here and not in each command: the same one line for both, said before anything else runs,
instead of a ModuleNotFoundError's traceback from deep inside textual's import.
"""

from __future__ import annotations

import argparse

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


# The languages of the terminal UI's screens (ziggurat.tui.i18n.LANGUAGES; a test keeps both
# equal). Written here so the parsers offer them without importing textual.
LANGUAGES = ("en", "ro", "hu", "eu")


def add_language_argument(parser: argparse.ArgumentParser) -> None:
    """``--lang``: the screens' language; the default (None) is taken from the environment."""
    parser.add_argument(
        "--lang",
        choices=LANGUAGES,
        default=None,
        help="the language of the screens (default: from LC_ALL, LC_MESSAGES or LANG, else en)",
    )


def language(args: argparse.Namespace) -> str:
    """``--lang``, or the language the environment's locale asks for."""
    from ziggurat.tui.i18n import language_from_environment

    return str(args.lang) if args.lang else language_from_environment()
