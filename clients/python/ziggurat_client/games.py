"""Game names and options as plain strings, read from the wire's ``GameConfig``.

Bots see a match's configuration as ``(game, seats, options)`` with string values
(``{"variant": "beginner"}``), the same vocabulary as the rules pages and the
server's command line, so a bot never needs the protobuf enums.
"""

from __future__ import annotations

from ziggurat_client.v1 import game_pb2

GAMES: dict[str, game_pb2.Game.ValueType] = {
    "pylos": game_pb2.GAME_PYLOS,
    "kabaleo": game_pb2.GAME_KABALEO,
    "phantom-ttt": game_pb2.GAME_PHANTOM_TIC_TAC_TOE,
}
"""Game name → wire enum."""


def game_enum(name: str) -> game_pb2.Game.ValueType:
    """The wire enum of a game name; ValueError names the known games."""
    try:
        return GAMES[name]
    except KeyError:
        raise ValueError(f"unknown game {name!r} (known: {', '.join(GAMES)})") from None


def _enum_word(name: str, prefix: str) -> str:
    return name.removeprefix(prefix).lower()


def config_strings(config: game_pb2.GameConfig) -> tuple[str, int, dict[str, str]]:
    """(game name, seats, options) of a match's config; options left at their default are omitted."""
    names = {number: name for name, number in GAMES.items()}
    game = names.get(config.game, "")
    options: dict[str, str] = {}
    if game == "pylos":
        if config.pylos.variant:
            options["variant"] = _enum_word(
                game_pb2.PylosVariant.Name(config.pylos.variant), "PYLOS_VARIANT_"
            )
        if config.pylos.max_moves:
            options["max_moves"] = str(config.pylos.max_moves)
    elif game == "kabaleo":
        if config.kabaleo.deal:
            options["deal"] = _enum_word(game_pb2.KabaleoDeal.Name(config.kabaleo.deal), "KABALEO_DEAL_")
        if config.kabaleo.last_stack:
            options["last_stack"] = "true"
        if config.kabaleo.colours:
            options["colours"] = config.kabaleo.colours
    options.update(config.rule_options)  # a game without a typed message has its options here
    return game, config.seats or 2, options


def game_config(game: str, seats: int = 2, **options: str | int | bool) -> game_pb2.GameConfig:
    """The wire config of a match from strings: ``game_config("pylos", variant="beginner")``,
    ``game_config("kabaleo", 4, deal="equal", last_stack=True)``. Unknown options raise ValueError."""
    config = game_pb2.GameConfig(game=game_enum(game), seats=seats)
    known = {"pylos": {"variant", "max_moves"}, "kabaleo": {"deal", "last_stack", "colours"}}.get(game, set())
    unknown = sorted(set(options) - known)
    if unknown:
        raise ValueError(f"unknown {game} options {unknown} (known: {sorted(known)})")
    if game == "pylos":
        config.pylos.variant = game_pb2.PylosVariant.Value(
            "PYLOS_VARIANT_" + str(options.get("variant", "standard")).upper()
        )
        config.pylos.max_moves = int(options.get("max_moves", 0))
    elif game == "kabaleo":
        config.kabaleo.deal = game_pb2.KabaleoDeal.Value(
            "KABALEO_DEAL_" + str(options.get("deal", "random")).upper()
        )
        config.kabaleo.last_stack = options.get("last_stack") in (True, "true")
        config.kabaleo.colours = str(options.get("colours", ""))
    return config
