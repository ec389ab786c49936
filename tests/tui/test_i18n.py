"""The terminal UI in four languages: every catalogue says everything English says, with the
same placeholders; the locale picks the language; and a real lobby and game, driven by Pilot
against a real server, read in Romanian and in Basque with no English left on the screen."""

from __future__ import annotations

import io
import re
from typing import Any

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Button, Select

from tests.servers import RunningServer
from tests.tui.test_tui import screen_of, shown_moves, until
from ziggurat.cli import terminal_ui
from ziggurat.tui import ZigguratApp
from ziggurat.tui.game import ConfirmResign, GameScreen
from ziggurat.tui.i18n import (
    CATALOGUES,
    LANGUAGES,
    language_from_environment,
    plural_category,
    set_language,
    t,
)
from ziggurat.tui.lobby import LobbyScreen
from ziggurat.tui.locales import Message
from ziggurat_client import ZigguratClient

ENGLISH = CATALOGUES["en"]
PLACEHOLDER = re.compile(r"\{(\w+)\}")
SHARED = {"ziggurat", "standard"}  # the same word in every language
PLURAL_FORMS = {
    "en": {"one", "other"},
    "ro": {"one", "few", "other"},
    "hu": {"one", "other"},
    "eu": {"one", "other"},
}


def forms(message: Message) -> list[str]:
    return list(message.values()) if isinstance(message, dict) else [message]


@pytest.mark.parametrize("language", LANGUAGES)
def test_every_catalogue_has_the_english_keys_and_placeholders(language: str) -> None:
    catalogue = CATALOGUES[language]
    assert set(catalogue) == set(ENGLISH)
    for key, english in ENGLISH.items():
        wanted = {name for form in forms(english) for name in PLACEHOLDER.findall(form)}
        for form in forms(catalogue[key]):
            assert set(PLACEHOLDER.findall(form)) == wanted, (key, form)
        if isinstance(english, dict) or isinstance(catalogue[key], dict):
            assert isinstance(catalogue[key], dict), key
            assert set(catalogue[key]) == PLURAL_FORMS[language], key  # type: ignore[arg-type]
            assert "count" in wanted, key


def test_the_cli_offers_the_languages_that_have_a_catalogue() -> None:
    assert terminal_ui.LANGUAGES == LANGUAGES == tuple(CATALOGUES)


@pytest.mark.parametrize(
    ("environment", "language"),
    [
        ({}, "en"),
        ({"LANG": "C"}, "en"),
        ({"LANG": "C.UTF-8"}, "en"),
        ({"LANG": "ro_RO.UTF-8"}, "ro"),
        ({"LANG": "eu_ES.UTF-8"}, "eu"),
        ({"LANG": "hu_HU"}, "hu"),
        ({"LANG": "de_DE.UTF-8"}, "en"),
        ({"LANG": "ro_RO.UTF-8", "LC_MESSAGES": "hu_HU.UTF-8"}, "hu"),
        ({"LANG": "ro_RO.UTF-8", "LC_MESSAGES": "hu_HU.UTF-8", "LC_ALL": "C"}, "en"),
        ({"LC_ALL": "", "LANG": "eu_ES@euro"}, "eu"),
    ],
)
def test_the_locale_picks_the_language(environment: dict[str, str], language: str) -> None:
    assert language_from_environment(environment) == language


def test_plural_forms_follow_each_language() -> None:
    assert [plural_category("ro", n) for n in (0, 1, 2, 19, 20, 101, 102, 120)] == [
        "few", "one", "few", "few", "other", "few", "few", "other",
    ]  # fmt: skip
    assert [plural_category("en", n) for n in (0, 1, 2)] == ["other", "one", "other"]
    set_language("ro")
    assert t("servers.found", count=1).startswith("1 server găsit")
    assert t("servers.found", count=3).startswith("3 servere găsite")
    assert t("servers.found", count=20).startswith("20 de servere găsite")
    set_language("eu")
    assert t("servers.found", count=1).startswith("Zerbitzari 1 aurkitu da")
    set_language("xx")  # no such catalogue: English
    assert t("servers.found", count=2).startswith("2 servers found")


def screen_text(pilot: Pilot[Any]) -> str:
    """Every character on the terminal now, as lines of plain text."""
    app = pilot.app
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True, legacy_windows=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def english_left(language: str, text: str, names: set[str]) -> list[str]:
    """The English catalogue's words (each piece between placeholders, over 3 characters) that
    appear on screen, leaving out ``names`` (bots') and the words every language shares."""
    found = []
    for message in ENGLISH.values():
        for form in forms(message):
            for piece in PLACEHOLDER.split(form)[::2]:
                piece = piece.strip(" ·:;,.()→…✓✗\n")
                if (
                    len(piece) > 3
                    and piece not in names | SHARED
                    and re.search(rf"(?<!\w){re.escape(piece)}(?!\w)", text)
                ):
                    found.append(piece)
    return found


@pytest.mark.parametrize(
    ("language", "lobby_words", "game_words"),
    [
        ("ro", ["joci ca ann", "Meci nou", "Creează și ia loc", "Reîmprospătează"],
         ["Nivelul 1", "Înapoi", "E rândul tău"]),
        ("eu", ["jokalaria: ann", "Partida berria", "Sortu eta eseri", "Freskatu"],
         ["1. maila", "Atzera", "Zure txanda"]),
    ],
)  # fmt: skip
async def test_the_lobby_and_a_game_speak_the_chosen_language(
    server: RunningServer, language: str, lobby_words: list[str], game_words: list[str]
) -> None:
    app = ZigguratApp(server=server.address, player_name="ann", language=language)
    async with ZigguratClient(server.address) as other, app.run_test(size=(130, 44)) as pilot:
        lobby: LobbyScreen = await screen_of(pilot, LobbyScreen)
        await until(pilot, lambda: len(lobby.opponents) == 4 and lobby.matches_list.option_count > 0)
        await pilot.pause()
        names = {bot.name for bot in lobby.opponents}
        text = screen_text(pilot)
        assert all(word in text for word in lobby_words), text
        assert english_left(language, text, names) == [], text
        lobby.query_one("#opponents", Select).value = "builtin:random"
        lobby.query_one("#create-button", Button).press()
        game: GameScreen = await screen_of(pilot, GameScreen)
        await until(pilot, lambda: game.state.my_turn and bool(shown_moves(game)))
        await pilot.pause()
        text = screen_text(pilot)
        assert all(word in text for word in game_words), text
        assert english_left(language, text, names) == [], text
        await pilot.press("ctrl+r")
        await screen_of(pilot, ConfirmResign)
        await pilot.pause()
        text = screen_text(pilot)
        assert t("game.resignAsk").split("?")[0] in text
        assert english_left(language, text, names) == [], text
        await pilot.press("n")
        del other
