"""One test per Kabaleo rule or edge case, built from position strings (rules page)."""

from __future__ import annotations

import random

import pytest

from ziggurat.rules.core import (
    GameOverError,
    IllegalMoveError,
    InvalidConfigError,
    InvalidPositionError,
    MalformedMoveError,
    Outcome,
    Termination,
)
from ziggurat.rules.kabaleo import (
    KABALEO,
    Deal,
    KabaleoConfig,
    apply,
    forfeit,
    format_position,
    legal_moves,
    new_game,
    outcome_of,
    parse_position,
    referee_view,
    score_key,
    view,
)

SEED = bytes(range(32))
TWO = KabaleoConfig(2)
TWO_LAST = KabaleoConfig(2, last_stack=True)
BOARD = "R/G/B/O/G/R/O/B/B/O/R/G/O/B/G/R"
BOARD_TAIL = BOARD[2:]  # stacks 2..16
EXAMPLE = f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GR+BO"  # rules page, "Notation"


def pos(text: str, config: KabaleoConfig = TWO) -> str:
    """Parse and format back: every position used here must round-trip."""
    state = parse_position(text, config)
    assert format_position(state) == text
    return text


def after(text: str, move: str, config: KabaleoConfig = TWO) -> str:
    return format_position(apply(parse_position(text, config), move))


# ------------------------------------------------------------------ notation examples


def test_rules_page_example_round_trips_and_views() -> None:
    state = parse_position(EXAMPLE, KabaleoConfig(2, Deal.EQUAL))
    assert format_position(state) == EXAMPLE
    assert view(state, 0).position == f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - G?+??"
    assert view(state, 1).position == f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - ?R+??"
    assert view(state, None).position == f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - ??+??"
    assert referee_view(state).position == EXAMPLE


def test_rules_page_example_after_b1() -> None:
    result = after(EXAMPLE, "B1", KabaleoConfig(2, Deal.EQUAL))
    assert result == f"RB/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBBOOO 2 1 GR+BO"


# ------------------------------------------------------------------ placement rules


def test_piece_on_a_different_top_covers_it() -> None:
    start = pos(f"RG/{BOARD_TAIL} RRRGGBBBOOO/RRRGGGBBBOOO 2 1 GR+BO")
    assert after(start, "B1") == f"RGB/{BOARD_TAIL} RRRGGBBBOOO/RRRGGGBBOOO 1 1 GR+BO"


def test_cancellation_reveals_the_piece_below() -> None:
    start = pos(f"RGB/{BOARD_TAIL} RRRGGBBBOOO/RRRGGGBBOOO 1 1 GR+BO")
    assert after(start, "B1") == f"RG/{BOARD_TAIL} RRRGGBBOOO/RRRGGGBBOOO 2 1 GR+BO"


def test_cancellation_reveals_a_bare_base() -> None:
    start = pos(f"RB/GR/{BOARD[4:]} RRGGGBBBOOO/RRRGGGBBOOO 1 2 GR+BO")
    result = after(start, "B1")
    assert result == f"R/GR/{BOARD[4:]} RRGGGBBOOO/RRRGGGBBOOO 2 1 GR+BO"
    # and the revealed bare red base now refuses red
    with pytest.raises(IllegalMoveError, match="stack 1 is a bare red base"):
        apply(parse_position(result, TWO), "R1")


def test_same_colour_bare_base_refused() -> None:
    state = parse_position(EXAMPLE, TWO)
    assert "R1" not in legal_moves(state)
    with pytest.raises(IllegalMoveError, match="stack 1 is a bare red base"):
        apply(state, "R1")
    with pytest.raises(IllegalMoveError, match="stack 3 is a bare blue base"):
        apply(state, "B3")


def test_last_stack_forbids_the_previous_stack_only_when_on() -> None:
    text = f"RB/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBBOOO 2 1 GR+BO"
    on = parse_position(text, TWO_LAST)
    off = parse_position(text, TWO)
    assert not any(m[1:] == "1" for m in legal_moves(on))
    with pytest.raises(IllegalMoveError, match="last_stack: stack 1 was played last"):
        apply(on, "G1")
    assert {"R1", "G1", "B1", "O1"} <= set(legal_moves(off))
    apply(off, "G1")
    # the ban lasts one move: after seat 2 plays elsewhere, stack 1 is free again
    later = apply(on, "R2")
    assert "G1" in legal_moves(later)


def test_last_stack_also_forbids_cancelling_on_the_previous_stack() -> None:
    text = f"RB/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBBOOO 2 1 GR+BO"
    with pytest.raises(IllegalMoveError, match="last_stack"):
        apply(parse_position(text, TWO_LAST), "B1")
    assert after(text, "B1") == f"R/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBOOO 1 1 GR+BO"


def test_legal_moves_are_sorted_unique_strings() -> None:
    moves = legal_moves(parse_position(EXAMPLE, TWO))
    assert moves == sorted(set(moves))
    assert moves[:3] == ["B1", "B10", "B11"]  # plain string order
    assert len(moves) == 4 * 12  # 4 colours x (16 stacks - 4 bare bases of that colour)


# ------------------------------------------------------------------ errors


@pytest.mark.parametrize(
    "move", ["b7", "B07", "B0", "X3", "B", "", " B7", "B7 ", "7B", "BB7", "B-1", "B+7", "B٣"]
)
def test_malformed_moves(move: str) -> None:
    state = parse_position(EXAMPLE, TWO)
    with pytest.raises(MalformedMoveError) as caught:
        apply(state, move)
    assert caught.value.reason == "MALFORMED_MOVE"


@pytest.mark.parametrize(
    ("move", "message"),
    [
        ("P3", "no pink piece in your hand"),
        ("Y3", "no yellow piece in your hand"),
        ("B17", "stack 17 does not exist"),
        ("B999999999999", "stack 999999999999 does not exist"),
        ("B3", "stack 3 is a bare blue base"),
    ],
)
def test_illegal_moves_name_public_facts(move: str, message: str) -> None:
    state = parse_position(EXAMPLE, TWO)
    with pytest.raises(IllegalMoveError, match=message) as caught:
        apply(state, move)
    assert caught.value.reason == "ILLEGAL_MOVE"


def test_no_piece_of_that_colour_left() -> None:
    state = parse_position(pos(f"{BOARD} RRRRGGGOOOOO/RRGGGBBBBBBO 1 - GR+BO"), TWO)
    assert not any(move.startswith("B") for move in legal_moves(state))
    with pytest.raises(IllegalMoveError, match="no blue piece in your hand"):
        KABALEO.canonical_move(state, "B1")


def test_moves_after_the_end_raise_game_over() -> None:
    state = new_game(TWO, SEED)
    rng = random.Random(0)
    while state.to_move is not None:
        state = apply(state, KABALEO.random_move(state, rng))
    for move in ("B1", "zz", "R99"):
        with pytest.raises(GameOverError):
            apply(state, move)
    assert legal_moves(state) == []
    with pytest.raises(GameOverError):
        KABALEO.random_move(state, rng)


def test_canonical_move_returns_the_legal_move() -> None:
    state = parse_position(EXAMPLE, TWO)
    assert KABALEO.canonical_move(state, "B1") == "B1"
    with pytest.raises(MalformedMoveError):
        KABALEO.canonical_move(state, "b1")


# ------------------------------------------------------------------ player counts, deals, colours


@pytest.mark.parametrize(("players", "stacks", "pieces"), [(2, 16, 12), (3, 20, 10), (4, 24, 9)])
@pytest.mark.parametrize("deal", [Deal.RANDOM, Deal.EQUAL])
def test_player_counts(players: int, stacks: int, pieces: int, deal: Deal) -> None:
    if deal is Deal.EQUAL and players == 4:
        with pytest.raises(InvalidConfigError, match="equal"):
            KabaleoConfig(players, deal)
        return
    state = new_game(KabaleoConfig(players, deal), SEED)
    colours = state.colours_in_play
    assert len(colours) == players + 2
    assert len(state.stacks) == stacks
    assert all(len(stack) == 1 for stack in state.stacks)
    assert sorted(state.stacks) == sorted(c for c in colours for _ in range(4))
    assert [sum(hand) for hand in state.hands] == [pieces] * players
    totals = [sum(hand[i] for hand in state.hands) for i in range(6)]
    assert totals == [6 if c in colours else 0 for c in "RYGBOP"]
    if deal is Deal.EQUAL:
        share = 6 // players
        assert all(hand == tuple(share if c in colours else 0 for c in "RYGBOP") for hand in state.hands)
    assert len(set(state.objectives)) == players
    assert set(state.objectives) | set(state.unheld) == set(colours)
    assert state.to_move == 0 and state.last is None and state.ply == 0


def test_fixed_colours() -> None:
    config = KabaleoConfig(2, colours="PGRY")
    assert config.colours == "RYGP"
    for seed in (SEED, bytes(32), bytes([7] * 32)):
        state = new_game(config, seed)
        assert state.colours_in_play == "RYGP"
        assert set(state.objectives) | set(state.unheld) == set("RYGP")


@pytest.mark.parametrize(
    ("players", "colours", "deal"),
    [
        (2, "RYG", Deal.RANDOM),
        (2, "RYGBO", Deal.RANDOM),
        (3, "RRGBO", Deal.RANDOM),
        (2, "RYGX", Deal.RANDOM),
        (2, "rygb", Deal.RANDOM),
        (4, None, Deal.EQUAL),
        (1, None, Deal.RANDOM),
        (5, None, Deal.RANDOM),
    ],
)
def test_invalid_configs(players: int, colours: str | None, deal: Deal) -> None:
    with pytest.raises(InvalidConfigError) as caught:
        KabaleoConfig(players, deal, colours=colours)
    assert caught.value.reason == "INVALID_CONFIG"


def test_parse_config_and_inverse() -> None:
    assert KABALEO.parse_config({}, 3) == KabaleoConfig(3)
    config = KABALEO.parse_config({"deal": "equal", "last_stack": "true", "colours": "OBGR"}, 2)
    assert config == KabaleoConfig(2, Deal.EQUAL, True, "RGBO")
    assert KABALEO.config_options(config) == {"deal": "equal", "last_stack": "true", "colours": "RGBO"}
    assert KABALEO.config_options(KabaleoConfig(4)) == {}
    for c in (
        KabaleoConfig(2),
        KabaleoConfig(3, Deal.EQUAL),
        KabaleoConfig(4, last_stack=True, colours="RYGBOP"),
    ):
        assert KABALEO.parse_config(KABALEO.config_options(c), c.players) == c


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"dael": "equal"}, "unknown Kabaleo option"),
        ({"deal": "fair"}, "deal must be"),
        ({"last_stack": "yes"}, "last_stack must be"),
        ({"last_stack": "True"}, "last_stack must be"),
        ({"colours": "RGB"}, "exactly 4 colours"),
        ({"colours": "RGBZ"}, "unknown colour letter"),
    ],
)
def test_parse_config_errors(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError, match=message):
        KABALEO.parse_config(options, 2)


def test_equal_deal_with_four_seats_refused_by_parse_config() -> None:
    with pytest.raises(InvalidConfigError, match="equal"):
        KABALEO.parse_config({"deal": "equal"}, 4)


# ------------------------------------------------------------------ end and scoring

FOUR = KabaleoConfig(4)
# pink shows on 7 stacks (3 covered, tallest 2), red and yellow on 4, the rest fewer
PINK_WINS = "RP/YP/GP/BPR/OY/P/R/Y/G/B/O/P/RYR/Y/G/B/O/P/R/Y/G/B/O/P -/-/-/- - 1"
# red and blue on 6 stacks each; red 4 covered + 2 bare, blue 5 covered + 1 bare
BLUE_MORE_COVERED = "R/YR/GR/B/OR/PR/R/YB/GB/BG/OB/PB/RB/YBO/GY/BY/OG/P/RG/YG/G/BO/O/P -/-/-/- - 1"
# red and blue on 6 stacks, 4 covered each; blue tops a stack of height 4, red only 2
BLUE_TALLER = "R/YR/GR/B/OR/PR/R/YB/GB/B/OB/PBOB/RG/YG/GY/BYBY/OG/P/RG/Y/G/BYO/O/P -/-/-/- - 1"


def final(text: str, objectives: str) -> Outcome:
    state = parse_position(pos(f"{text} {objectives}", FOUR), FOUR)
    outcome = outcome_of(state)
    assert outcome is not None and outcome.termination is Termination.NORMAL
    return outcome


def test_worked_example_most_stacks_wins() -> None:
    state = parse_position(f"{PINK_WINS} GPRY+BO", FOUR)
    assert [score_key(state.stacks, c) for c in "GPRY"] == [(3, 0, 0), (7, 3, 2), (4, 2, 3), (4, 1, 2)]
    assert final(PINK_WINS, "GPRY+BO").ranks == (4, 1, 2, 3)


def test_tie_break_covered_stacks() -> None:
    state = parse_position(f"{BLUE_MORE_COVERED} RBGY+OP", FOUR)
    assert score_key(state.stacks, "R") == (6, 4, 2)
    assert score_key(state.stacks, "B") == (6, 5, 2)
    assert final(BLUE_MORE_COVERED, "RBGY+OP").ranks == (2, 1, 3, 4)


def test_tie_break_tallest_covered_stack() -> None:
    state = parse_position(f"{BLUE_TALLER} RBGY+OP", FOUR)
    assert score_key(state.stacks, "R") == (6, 4, 2)
    assert score_key(state.stacks, "B") == (6, 4, 4)
    assert final(BLUE_TALLER, "RBGY+OP").ranks == (2, 1, 3, 4)


def test_height_counts_the_base_and_bare_bases_have_no_height() -> None:
    assert score_key(("RGBOB", "B", "YB"), "B") == (3, 2, 5)
    assert score_key(("B", "B"), "B") == (2, 0, 0)
    assert score_key(("RG",), "B") == (0, 0, 0)


def test_unheld_colours_are_ignored_and_ties_share_rank() -> None:
    # pink (7 stacks) is unheld: red wins; green and blue tie on (3, 0, 0) and share 3rd
    assert final(PINK_WINS, "GRYB+OP").ranks == (3, 1, 2, 3)


def test_equal_keys_at_the_top_share_the_win() -> None:
    # every piece cancelled: all four colours show (4, 0, 0)
    state = parse_position(pos(f"{BOARD} -/- - 7 GR+BO"), TWO)
    outcome = outcome_of(state)
    assert outcome is not None and outcome.is_draw and outcome.winners == (0, 1)


@pytest.mark.parametrize(("players", "plies"), [(2, 24), (3, 30), (4, 36)])
@pytest.mark.parametrize("last_stack", [False, True])
def test_game_ends_after_every_piece_is_placed(players: int, plies: int, last_stack: bool) -> None:
    rng = random.Random(players)
    state = new_game(KabaleoConfig(players, last_stack=last_stack), SEED)
    for ply in range(plies):
        assert state.to_move == ply % players
        assert outcome_of(state) is None
        state = apply(state, rng.choice(legal_moves(state)))
    assert state.to_move is None and state.ply == plies
    assert all(sum(hand) == 0 for hand in state.hands)
    assert format_position(state).split(" ")[2] == "-"
    outcome = KABALEO.outcome(state)
    assert outcome is not None and outcome.termination is Termination.NORMAL


# ------------------------------------------------------------------ forfeits


def test_forfeited_seat_ranks_last_and_keeps_its_turns() -> None:
    # PINK_WINS one move before the end: seat 4 still holds a yellow piece
    before = "RP/YP/GP/BPR/O/P/R/Y/G/B/O/P/RYR/Y/G/B/O/P/R/Y/G/B/O/P -/-/-/Y 4 1 GPRY+BO"
    state = parse_position(before, FOUR)
    state = forfeit(state, 1, Termination.RESIGNATION)  # pink, the would-be winner
    assert state.to_move == 3 and state.forfeited == frozenset({1})
    assert outcome_of(state) is None
    state = apply(state, "Y5")
    outcome = outcome_of(state)
    assert outcome == Outcome(Termination.NORMAL, (3, 4, 1, 2))


def test_forfeited_seats_share_the_last_rank() -> None:
    before = "RP/YP/GP/BPR/O/P/R/Y/G/B/O/P/RYR/Y/G/B/O/P/R/Y/G/B/O/P -/-/-/Y 4 1 GPRY+BO"
    state = parse_position(before, FOUR)
    state = forfeit(state, 1, Termination.TIMEOUT)
    state = forfeit(state, 2, Termination.RESIGNATION)
    assert forfeit(state, 2, Termination.RESIGNATION) is state  # idempotent
    state = apply(state, "Y5")
    assert outcome_of(state) == Outcome(Termination.NORMAL, (2, 3, 3, 1))


def test_forfeit_in_a_two_seat_game_ends_it() -> None:
    state = forfeit(new_game(TWO, SEED), 0, Termination.TIMEOUT)
    assert state.to_move is None
    assert outcome_of(state) == Outcome.loss_for(2, 0, Termination.TIMEOUT)
    assert view(state, 1, released=True).objectives == state.objectives  # a released end reveals all
    assert view(state, 1).objectives == (None, state.objectives[1])  # the match has not released it
    with pytest.raises(GameOverError):
        apply(state, "B1")
    with pytest.raises(GameOverError):
        forfeit(state, 1, Termination.TIMEOUT)


def test_three_seat_game_ends_when_one_active_seat_is_left() -> None:
    state = new_game(KabaleoConfig(3), SEED)
    state = forfeit(state, 0, Termination.RESIGNATION)
    assert state.to_move == 0  # its turns still come
    state = forfeit(state, 2, Termination.TIMEOUT)
    assert outcome_of(state) == Outcome(Termination.TIMEOUT, (2, 1, 2))


def test_forfeit_unknown_seat() -> None:
    with pytest.raises(ValueError, match="seat 4 does not exist"):
        forfeit(new_game(KabaleoConfig(3), SEED), 4, Termination.RESIGNATION)


# ------------------------------------------------------------------ views


def test_views_show_own_objective_only_until_the_end() -> None:
    state = new_game(KabaleoConfig(4), SEED)
    for seat in range(4):
        seen = view(state, seat)
        assert seen.objectives == tuple(o if s == seat else None for s, o in enumerate(state.objectives))
        assert seen.unheld == (None, None)
        assert seen.viewer == seat and not seen.referee
        assert seen.position.endswith(
            " " + "".join(o if s == seat else "?" for s, o in enumerate(state.objectives)) + "+??"
        )
    spectator = view(state, None)
    assert spectator.objectives == (None,) * 4 and spectator.position.endswith(" ????+??")
    referee = referee_view(state)
    assert referee.referee and referee.objectives == state.objectives and referee.unheld == state.unheld


def test_views_at_a_released_end_reveal_everything() -> None:
    state = new_game(KabaleoConfig(3), SEED)
    rng = random.Random(5)
    while state.to_move is not None:
        state = apply(state, KABALEO.random_move(state, rng))
    for seat in (None, 0, 1, 2):
        seen = view(state, seat, released=True)
        assert seen.objectives == state.objectives and seen.unheld == state.unheld
        assert seen.position == format_position(state)
        assert seen.outcome == outcome_of(state)
        held = view(state, seat)  # over, but its match has not released the end
        assert held.objectives == tuple(c if s == seat else None for s, c in enumerate(state.objectives))
        assert held.unheld == (None, None) and held.outcome is None


def test_view_legal_moves_only_for_the_seat_to_move() -> None:
    state = new_game(KabaleoConfig(3), SEED)
    assert view(state, 0).legal_moves == tuple(legal_moves(state))
    assert view(state, 1).legal_moves == ()
    assert view(state, None).legal_moves == ()
    assert referee_view(state).legal_moves == tuple(legal_moves(state))


def test_view_fields_are_public_values() -> None:
    state = new_game(KabaleoConfig(2), SEED)
    seen = KABALEO.view(state, 1)
    assert seen.game == "kabaleo" and seen.seats == 2 and seen.to_move == 0 and seen.ply == 0
    assert seen.stacks == state.stacks and seen.hands == state.hands and seen.forfeited == frozenset()
    assert "objectives" not in repr(state) and "unheld" not in repr(state)
    with pytest.raises(ValueError, match="seat 2 does not exist"):
        view(state, 2)


# ------------------------------------------------------------------ positions


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 -", "5 space-separated fields"),
        (f"{BOARD}  RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GR+BO", "5 space-separated fields"),
        (f"{BOARD}/R RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GR+BO", "16 stacks"),
        (f"Y/{BOARD_TAIL} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GR+BO", "bases must be 4 of each"),
        (f"RR/{BOARD_TAIL} RRGGGBBBOOO/RRRGGGBBBOOO 2 1 GR+BO", "piece on its own colour"),
        (f"RY/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBBOOO 2 1 GR+BO", "not in play"),
        (f"r/{BOARD_TAIL} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GR+BO", "colour letters"),
        (f"{BOARD} RRRGGGBBBOOO 1 - GR+BO", "2 hands"),
        (f"{BOARD} GRRRGGBBBOOO/RRRGGGBBBOOO 1 - GR+BO", "RYGBOP order"),
        (f"{BOARD} RRRGGGBBBOOOO/RRRGGGBBBOO 1 - GR+BO", "should hold"),
        (f"RB/{BOARD_TAIL} RRRGGGBBBOOO/RRRGGGBBBOO 2 1 GR+BO", "only 6"),
        (f"RB/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBBOO 1 1 GR+BO", "pairs"),
        (f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 2 - GR+BO", "TO_MOVE must be 1"),
        (f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 1 GR+BO", "LAST must be '-'"),
        (f"RB/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBBOOO 2 - GR+BO", "stack number"),
        (f"RB/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBBOOO 2 01 GR+BO", "stack number"),
        (f"RB/{BOARD_TAIL} RRRGGGBBOOO/RRRGGGBBBOOO 2 17 GR+BO", "stack number"),
        (f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - G?+??", "no '?'"),
        (f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GG+BO", "once"),
        (f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GY+BO", "once"),
        (f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GR+OB", "order"),
        (f"{BOARD} RRRGGGBBBOOO/RRRGGGBBBOOO 1 - GRBO", "OBJECTIVES must be"),
        (f"{BOARD} -/- 1 5 GR+BO", "TO_MOVE must be -"),
    ],
)
def test_invalid_positions(text: str, message: str) -> None:
    with pytest.raises(InvalidPositionError, match=message) as caught:
        parse_position(text, TWO)
    assert caught.value.reason == "INVALID_POSITION"


def test_position_must_match_fixed_colours_and_equal_deal() -> None:
    with pytest.raises(InvalidPositionError, match="fixes colours"):
        parse_position(EXAMPLE, KabaleoConfig(2, colours="RYGB"))
    parse_position(EXAMPLE, KabaleoConfig(2, colours="RGBO"))
    random_hands = f"{BOARD} RRRRGGBBBOOO/RRGGGGBBBOOO 1 - GR+BO"
    parse_position(random_hands, TWO)
    with pytest.raises(InvalidPositionError, match="equal deal"):
        parse_position(random_hands, KabaleoConfig(2, Deal.EQUAL))


def test_empty_hand_is_a_dash_and_over_is_a_dash() -> None:
    assert pos(f"{PINK_WINS} GPRY+BO", FOUR).split(" ")[1:3] == ["-/-/-/-", "-"]
