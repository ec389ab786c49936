"""Protobuf <-> rules values: configurations, views and outcomes."""

from __future__ import annotations

from ziggurat.rules.core import InvalidConfigError, Outcome, Termination, View
from ziggurat.rules.kabaleo import KabaleoView
from ziggurat.rules.phantom_ttt import PhantomTicTacToeView
from ziggurat.rules.pylos import PylosView
from ziggurat.rules.registry import AnyRules
from ziggurat.v1 import game_pb2 as pb

GAME_ENUMS: dict[str, pb.Game.ValueType] = {
    "pylos": pb.GAME_PYLOS,
    "kabaleo": pb.GAME_KABALEO,
    "phantom-ttt": pb.GAME_PHANTOM_TIC_TAC_TOE,
}
GAME_NAMES: dict[int, str] = {number: name for name, number in GAME_ENUMS.items()}

_VARIANTS: dict[int, str] = {
    pb.PYLOS_VARIANT_STANDARD: "standard",
    pb.PYLOS_VARIANT_BEGINNER: "beginner",
    pb.PYLOS_VARIANT_ADVANCED: "advanced",
}
_DEALS: dict[int, str] = {pb.KABALEO_DEAL_RANDOM: "random", pb.KABALEO_DEAL_EQUAL: "equal"}
_VARIANT_ENUMS: dict[str, pb.PylosVariant.ValueType] = {
    "standard": pb.PYLOS_VARIANT_STANDARD,
    "beginner": pb.PYLOS_VARIANT_BEGINNER,
    "advanced": pb.PYLOS_VARIANT_ADVANCED,
}
_DEAL_ENUMS: dict[str, pb.KabaleoDeal.ValueType] = {
    "random": pb.KABALEO_DEAL_RANDOM,
    "equal": pb.KABALEO_DEAL_EQUAL,
}

TERMINATIONS: dict[Termination, pb.Termination.ValueType] = {
    Termination.NORMAL: pb.TERMINATION_NORMAL,
    Termination.PYRAMID_COMPLETE: pb.TERMINATION_PYRAMID_COMPLETE,
    Termination.NO_LEGAL_MOVE: pb.TERMINATION_NO_LEGAL_MOVE,
    Termination.REPETITION: pb.TERMINATION_REPETITION,
    Termination.MOVE_LIMIT: pb.TERMINATION_MOVE_LIMIT,
    Termination.RESIGNATION: pb.TERMINATION_RESIGNATION,
    Termination.TIMEOUT: pb.TERMINATION_TIMEOUT,
    Termination.ABORTED: pb.TERMINATION_ABORTED,
    Termination.ILLEGAL_MOVE: pb.TERMINATION_ILLEGAL_MOVE,
    Termination.ABANDONED: pb.TERMINATION_ABANDONED,
}


def config_from_proto(config: pb.GameConfig) -> tuple[str, int, dict[str, str]]:
    """(game name, seats, string options) for the rules' ``parse_config``.

    Validation of the values themselves is left to the game, so the CLI, records
    and the wire all share one set of error messages.
    """
    game = GAME_NAMES.get(config.game)
    if game is None:
        known = ", ".join(pb.Game.Name(number) for number in GAME_ENUMS.values())
        raise InvalidConfigError(f"config.game must be one of {known}")
    options: dict[str, str] = {}
    which = config.WhichOneof("options")
    if which is not None and which != game:
        raise InvalidConfigError(f"options for {which} given for a {game} match")
    if game == "pylos":
        if config.pylos.variant:
            options["variant"] = _VARIANTS.get(config.pylos.variant, str(config.pylos.variant))
        if config.pylos.max_moves:
            options["max_moves"] = str(config.pylos.max_moves)
    elif game == "kabaleo":
        if config.kabaleo.deal:
            options["deal"] = _DEALS.get(config.kabaleo.deal, str(config.kabaleo.deal))
        if config.kabaleo.last_stack:
            options["last_stack"] = "true"
        if config.kabaleo.colours:
            options["colours"] = config.kabaleo.colours
    twice = sorted(set(options) & set(config.rule_options))
    if twice:
        raise InvalidConfigError(
            f"option(s) {', '.join(twice)} given both in config.{game} and in rule_options"
        )
    # The game refuses keys it does not declare (parse_config), with its own message.
    options.update(config.rule_options)
    if not config.seats:
        # Not read as 2: a client that forgot the count would get a game it did not ask for.
        raise InvalidConfigError(
            "config.seats must be given: 2 for Pylos and phantom-ttt, 2 to 4 for Kabaleo"
        )
    return game, config.seats, options


def config_to_proto(game: str, seats: int, options: dict[str, str]) -> pb.GameConfig:
    """Inverse of :func:`config_from_proto` for options produced by ``config_options``."""
    out = pb.GameConfig(game=GAME_ENUMS[game], seats=seats)
    if game == "pylos":
        out.pylos.variant = _VARIANT_ENUMS[options.get("variant", "standard")]
        out.pylos.max_moves = int(options.get("max_moves", "0"))
    elif game == "kabaleo":
        out.kabaleo.deal = _DEAL_ENUMS[options.get("deal", "random")]
        out.kabaleo.last_stack = options.get("last_stack", "false") == "true"
        out.kabaleo.colours = options.get("colours", "")
    else:  # a game with no typed options message: its options by name
        out.rule_options.update(options)
    return out


def game_info(rules: AnyRules) -> pb.GameInfo:
    """What ``MatchService.ListGames`` says of one registered game: all of it declared by the game."""
    return pb.GameInfo(
        game=GAME_ENUMS[rules.name],
        name=rules.name,
        title=rules.title,
        min_seats=rules.min_seats,
        max_seats=rules.max_seats,
        options=[
            pb.GameOptionInfo(
                key=option.key,
                description=option.description,
                choices=list(option.choices),
                default_value=option.default,
            )
            for option in rules.options
        ],
        hidden_information=rules.hidden_information,
        private_moves=rules.private_moves,
    )


def outcome_to_proto(outcome: Outcome) -> pb.Outcome:
    """Wire form of an outcome; seats become 1-based."""
    return pb.Outcome(
        termination=TERMINATIONS[outcome.termination],
        ranks=list(outcome.ranks),
        winners=[seat + 1 for seat in outcome.winners],
    )


def view_to_proto(view: View) -> pb.GameView:
    """Wire form of a view. Legal moves are kept only in the view of the seat to move."""
    out = pb.GameView()
    fill_view(out, view)
    return out


def fill_view(out: pb.GameView, view: View) -> None:
    """Write ``view`` into an empty ``out`` in place (e.g. the view field of an event being
    built, which spares a copy per event and audience on the server's hot path).
    """
    out.game = GAME_ENUMS[view.game]
    out.viewer_seat = 0 if view.viewer is None else view.viewer + 1
    out.seats = view.seats
    out.to_move = 0 if view.to_move is None else view.to_move + 1
    out.ply = view.ply
    out.position = view.position
    if view.to_move is not None and view.viewer == view.to_move:
        out.legal_moves.extend(view.legal_moves)
    if view.outcome is not None:
        out.outcome.CopyFrom(outcome_to_proto(view.outcome))
    if isinstance(view, PylosView):
        out.pylos.levels.extend(view.levels)
        out.pylos.light_reserve, out.pylos.dark_reserve = view.reserves
    elif isinstance(view, KabaleoView):
        k = out.kabaleo
        k.stacks.extend(view.stacks)
        k.hands.extend(_hand_text(hand) for hand in view.hands)
        k.objectives.extend(letter or "?" for letter in view.objectives)
        k.unheld.extend(letter or "?" for letter in view.unheld)
        k.last_stack = 0 if view.last is None else view.last + 1
        k.forfeited_seats.extend(sorted(seat + 1 for seat in view.forfeited))
    elif isinstance(view, PhantomTicTacToeView):
        out.phantom_tic_tac_toe.cells = view.cells


def _hand_text(counts: tuple[int, ...]) -> str:
    return "".join(letter * count for letter, count in zip("RYGBOP", counts, strict=True))
