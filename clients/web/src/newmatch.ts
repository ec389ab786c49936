// The lobby's "New match" form, built from what the server says it hosts (MatchService.ListGames):
// every listed game, a seat count within its min..max, and one field per rule option the game
// declares (a select for a few choices, a checkbox for false/true, a text field otherwise, each
// starting at the declared default), sent as GameConfig.rule_options. Nothing here knows a game:
// a game added to the server is offered, created and played (on the generic board) by this page
// as it is. The catalogue only lends words: an option it knows gets a translated label (and its
// choices translated words); one it does not know is labelled with the server's description.
import { create } from "@bufbuild/protobuf";
import { api, asCreator, bots as botService, explain, keepTicket, reasonOf, ConnectError } from "./api.js";
import { clear, h } from "./dom.js";
import { GameConfigSchema, type GameInfo, type GameOptionInfo } from "./gen/ziggurat/v1/game_pb.js";
import { TimeoutPolicy } from "./gen/ziggurat/v1/match_pb.js";
import type { BuiltinBot } from "./gen/ziggurat/v1/match_service_pb.js";
import { t, type Key } from "./i18n.js";
import type { NameField, RemoteBots } from "./lobby.js";
import { navigate } from "./router.js";
import { duration } from "./text.js";

/** Words the catalogue has for an option, by "game.key": its label, a hint, its choices. */
interface KnownOption {
  label: Key;
  hint?: Key;
  choices?: Record<string, Key>;
}

const KNOWN_OPTIONS: Record<string, KnownOption> = {
  "pylos.variant": { label: "form.variant", choices: { standard: "variant.standard", beginner: "variant.beginner", advanced: "variant.advanced" } },
  "pylos.max_moves": { label: "form.maxMoves", hint: "form.maxMovesHint" },
  "kabaleo.deal": { label: "form.deal", choices: { random: "options.randomDeal", equal: "options.equalDeal" } },
  "kabaleo.last_stack": { label: "options.lastStack" },
  "kabaleo.colours": { label: "form.colours", hint: "form.coloursHint" },
};

/** The value of an opponent choice that invites a connected remote bot (built-in bots have no colon). */
const REMOTE_PREFIX = "remote:";

/** "Pylos (2 players)", "Kabaleo (2–4 players)": the server's title and its seat counts. */
export function gameLabel(info: GameInfo): string {
  const seats = info.minSeats === info.maxSeats
    ? t("options.players", { count: info.minSeats })
    : t("form.playersRange", { min: info.minSeats, max: info.maxSeats });
  return `${info.title || info.name} (${seats})`;
}

/** An option offered as a checkbox: exactly the choices "false" and "true". */
function isSwitch(option: GameOptionInfo): boolean {
  return option.choices.length === 2 && option.choices.includes("false") && option.choices.includes("true");
}

/** A field id from an option key: "max_moves" is "option-max-moves" (never one of the page's own ids). */
function fieldId(key: string): string {
  return `option-${key.toLowerCase().replace(/[^a-z0-9]+/g, "-")}`;
}

/** One option's field, and how to read what it holds now. */
interface OptionField {
  element: HTMLElement;
  option: GameOptionInfo;
  value(): string;
}

function optionField(game: string, option: GameOptionInfo): OptionField {
  const known = KNOWN_OPTIONS[`${game}.${option.key}`];
  const id = fieldId(option.key);
  const label = known ? t(known.label) : option.description || option.key;
  const hint = known?.hint ? h("span", { class: "hint" }, t(known.hint)) : null;
  if (isSwitch(option)) {
    const box = h("input", { id, type: "checkbox", checked: option.defaultValue === "true", "data-option": option.key });
    return { element: h("label", { class: "option" }, box, ` ${label}`), option, value: () => String(box.checked) };
  }
  if (option.choices.length) {
    // A default of "" means "none": a choice of its own, first.
    const values = option.defaultValue === "" && !option.choices.includes("") ? ["", ...option.choices] : option.choices;
    const select = h("select", { id, "data-option": option.key },
      values.map((v) => h("option", { value: v, selected: v === option.defaultValue }, v === "" ? "—" : known?.choices?.[v] ? t(known.choices[v]) : v)));
    return { element: h("label", { class: "option" }, `${label} `, hint, select), option, value: () => select.value };
  }
  const input = h("input", { id, value: option.defaultValue, autocomplete: "off", spellcheck: "false", "data-option": option.key });
  return { element: h("label", { class: "option" }, `${label} `, hint, input), option, value: () => input.value.trim() };
}

/** The options a form sends: each field whose value is not the default ("" leaves an option out). */
export function ruleOptions(fields: { option: GameOptionInfo; value(): string }[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const field of fields) {
    const value = field.value();
    if (value !== "" && value !== field.option.defaultValue) out[field.option.key] = value;
  }
  return out;
}

/** One game's part of the form: its seat count and its option fields (kept while another game is chosen). */
interface GamePart {
  info: GameInfo;
  element: HTMLElement;
  seats: HTMLSelectElement;
  fields: OptionField[];
}

function gamePart(info: GameInfo): GamePart {
  const counts: number[] = [];
  for (let n = info.minSeats; n <= info.maxSeats; n++) counts.push(n);
  const seats = h("select", { id: "seats" }, counts.map((n) => h("option", { value: n }, t("options.players", { count: n }))));
  const fields = info.options.map((o) => optionField(info.name, o));
  // A game with one seat count needs no question.
  const seatsLabel = h("label", { class: "seat-count", hidden: counts.length < 2 }, `${t("form.players")} `, seats);
  return { info, seats, fields, element: h("div", { class: "game-options", "data-game": info.name }, seatsLabel, fields.map((f) => f.element)) };
}

const CLOCKS: Record<string, { perMoveMs?: number; baseMs?: number; incrementMs?: number }> = {
  none: {}, move30: { perMoveMs: 30000 }, move10: { perMoveMs: 10000 },
  fischer5: { baseMs: 300000, incrementMs: 3000 }, fischer1: { baseMs: 60000, incrementMs: 2000 },
};

/** Why a match was not created, in words: for INVALID_CONFIG the server's own sentence too (it names the option). */
function refusal(error: unknown): string {
  const words = explain(error);
  if (reasonOf(error) === "INVALID_CONFIG" && error instanceof ConnectError && error.rawMessage) return `${words} (${error.rawMessage.trim()})`;
  return words;
}

export function renderForm(section: HTMLElement, games: GameInfo[], bots: BuiltinBot[], remote: RemoteBots, status: HTMLElement, you: NameField): void {
  clear(section);
  const playable = games.filter((g) => g.minSeats >= 1 && g.maxSeats >= g.minSeats);
  const game = h("select", { id: "game" }, playable.map((g) => h("option", { value: g.name }, gameLabel(g))));
  const parts = new Map(playable.map((g) => [g.name, gamePart(g)]));
  const chosenPart = h("div", { class: "chosen-game" });
  const current = (): GamePart | undefined => parts.get(game.value);
  const clock = h("select", { id: "clock" },
    h("option", { value: "none" }, t("form.noClock")),
    h("option", { value: "move30" }, t("clock.perMove", { limit: duration(30000) })),
    h("option", { value: "move10" }, t("clock.perMove", { limit: duration(10000) })),
    h("option", { value: "fischer5" }, t("clock.fischer", { base: duration(300000), increment: duration(3000) })),
    h("option", { value: "fischer1" }, t("clock.fischer", { base: duration(60000), increment: duration(2000) })));
  const opponents = h("div", { class: "opponents" });
  const renderOpponents = (): void => {
    const chosen = [...opponents.querySelectorAll<HTMLSelectElement>("select.opponent")].map((s) => s.value);
    clear(opponents);
    const part = current();
    if (!part) return;
    const g = part.info.game;
    const n = Number(part.seats.value);
    const choices = bots.filter((b) => b.games.includes(g));
    // A remote bot with no games listed plays every game.
    const connected = remote.bots.filter((b) => !b.games.length || b.games.includes(g));
    for (let i = 1; i < n; i++) {
      const select = h("select", { class: "opponent", "data-index": i },
        h("option", { value: "" }, t("form.person")),
        choices.length ? h("optgroup", { label: t("form.builtinBots") },
          choices.map((b) => h("option", { value: b.name, title: b.description }, t("form.bot", { name: b.name })))) : null,
        connected.length ? h("optgroup", { label: t("form.remoteBots") },
          connected.map((b) => h("option", { value: REMOTE_PREFIX + b.name, title: t("form.remoteLoad", { active: b.activeMatches, max: b.maxMatches }) },
            t("form.remote", { name: b.name })))) : null);
      const before = chosen[i - 1];
      if (before && [...select.options].some((o) => o.value === before)) select.value = before;
      opponents.append(h("label", {}, `${t("form.seatFor", { n: i })} `, select));
    }
  };
  remote.onChange(renderOpponents);
  const sync = (): void => {
    // Only the chosen game's fields are in the page (ids stay unique); the others keep their values.
    const part = current();
    if (part && chosenPart.firstChild !== part.element) chosenPart.replaceChildren(part.element);
    renderOpponents();
  };
  game.addEventListener("change", sync);
  for (const part of parts.values()) part.seats.addEventListener("change", renderOpponents);
  const button = h("button", { id: "create", class: "primary", disabled: !playable.length }, t("form.create"));
  button.addEventListener("click", () => void (async () => {
    const part = current();
    if (!part) return;
    const who = you.take();
    if (!who) {
      status.textContent = t("lobby.nameBeforeCreate");
      return;
    }
    button.disabled = true;
    let made = "";
    try {
      const config = create(GameConfigSchema, { game: part.info.game, seats: Number(part.seats.value), ruleOptions: ruleOptions(part.fields) });
      const created = await api.createMatch({ config, timeControl: { ...(CLOCKS[clock.value] ?? {}), onTimeout: TimeoutPolicy.FORFEIT } });
      const matchId = created.match!.matchId;
      made = matchId;
      const joined = await api.joinMatch({ matchId, playerName: who });
      keepTicket({ matchId, seat: joined.seat, token: joined.token, name: who, creatorToken: created.creatorToken });
      for (const select of opponents.querySelectorAll<HTMLSelectElement>("select.opponent")) {
        if (select.value.startsWith(REMOTE_PREFIX)) {
          await botService.inviteBot({ matchId, botName: select.value.slice(REMOTE_PREFIX.length) }, asCreator(created.creatorToken));
        } else if (select.value) {
          await api.addBot({ matchId, bot: select.value });
        }
      }
      navigate(`/match/${matchId}`);
    } catch (error) {
      if (reasonOf(error) === "BAD_NAME") you.refuse(explain(error));
      status.textContent = made
        ? t("form.partly", { id: made, why: explain(error) })
        : t("form.notCreated", { why: refusal(error) });
    } finally {
      button.disabled = false;
    }
  })());
  section.append(
    h("h2", {}, t("form.title")),
    h("label", {}, `${t("form.game")} `, game),
    chosenPart,
    h("label", {}, `${t("form.clock")} `, clock),
    opponents,
    button,
  );
  sync();
}
