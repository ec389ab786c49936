"""Find a bot by name: a built-in one, ``package.module:Class`` or ``path/to/file.py:Class``.

The thin client's only built-in is ``random``; a program with more bots (the server
distribution's ``ziggurat bot`` adds greedy, mcts and alphabeta) passes its own table.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ziggurat_client.bot import Bot
from ziggurat_client.random_bot import RandomBot

BUILT_IN: Mapping[str, Callable[..., Bot]] = {"random": RandomBot}
"""The bots this package ships, by name."""


class BotLoadError(ValueError):
    """The bot spec names nothing that can be loaded as a bot."""


def load_bot(
    spec: str, options: dict[str, Any] | None = None, built_in: Mapping[str, Callable[..., Bot]] = BUILT_IN
) -> Bot:
    """Instantiate the bot ``spec`` with keyword ``options``.

    A name without ``:`` is looked up in ``built_in``. ``module:Name`` and
    ``file.py:Name`` may name a class (instantiated with the options) or a ready object.
    """
    options = options or {}
    if ":" not in spec:
        if spec not in built_in:
            raise BotLoadError(f"unknown bot {spec!r}; built-in bots: {', '.join(sorted(built_in))}")
        return built_in[spec](**options)
    where, _, attribute = spec.rpartition(":")
    module = _import_file(Path(where)) if where.endswith(".py") else _import_module(where)
    try:
        target = getattr(module, attribute)
    except AttributeError:
        raise BotLoadError(f"{where} has no {attribute!r}") from None
    bot = target(**options) if inspect.isclass(target) else target
    if not isinstance(bot, Bot):
        raise BotLoadError(f"{spec} is not a bot: it needs a `name` and a `choose(turn)` method")
    return bot


def _import_module(name: str) -> Any:
    try:
        return importlib.import_module(name)
    except ImportError as error:
        raise BotLoadError(f"cannot import {name}: {error}") from None


def _import_file(path: Path) -> Any:
    if not path.is_file():
        raise BotLoadError(f"no such file: {path}")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise BotLoadError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
