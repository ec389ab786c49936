// The standing arena's pages (served by `ziggurat arena run` with a web port; docs/arena.md):
// #/arena, the live ladder — the arena's status, one standings table per game, the games being
// played now (each links to the ordinary match page to watch it) and the recent ones (ranks,
// rating changes, a link to replay); and #/arena/entrant/NAME, one entrant's lines, its rating
// game by game as a chart (with the same figures as a table) and its recent games. Both are
// polled every REFRESH_MS from the read-only ArenaService, each call cut off after
// CALL_TIMEOUT_MS, so that a server that stalls (not only one that refuses connections) is
// said to be lost within a few seconds. A server that runs no arena answers unimplemented:
// the page says so and stops asking.
import { arena, Code, ConnectError, explain, reasonOf, unreachable } from "./api.js";
import { clear, h, svg } from "./dom.js";
import {
  ArenaGameStatus, ArenaStatus, EntrantState,
  type Arena, type ArenaGame, type EntrantProfile, type Ladder, type LadderLine, type RatingPoint,
} from "./gen/ziggurat/v1/arena_service_pb.js";
import { Game } from "./gen/ziggurat/v1/game_pb.js";
import { language, t, type Key } from "./i18n.js";
import { arenaPath, navigate } from "./router.js";
import { gameName, terminationText } from "./text.js";

const REFRESH_MS = 2000;
const CALL_TIMEOUT_MS = 4000;
const RECENT_GAMES = 20;

/** A ladder line as the arena names it: "greedy" or "greedy@v2". */
function lineName(line: { entrant: string; version: string }): string {
  return line.version ? `${line.entrant}@${line.version}` : line.entrant;
}

function rating(value: number): string {
  return new Intl.NumberFormat(language(), { maximumFractionDigits: 0, useGrouping: false }).format(value);
}

function change(value: number): string {
  return new Intl.NumberFormat(language(), { signDisplay: "exceptZero", minimumFractionDigits: 1, maximumFractionDigits: 1, useGrouping: false }).format(value);
}

/** True when the server runs no arena: ArenaService is not served there (no reason given). */
function noArena(error: unknown): boolean {
  return error instanceof ConnectError && !reasonOf(error) && (error.code === Code.Unimplemented || error.code === Code.NotFound);
}

/** A message's JSON (64-bit numbers as strings): redraw only when what is shown changed. */
function signature(value: unknown): string {
  return JSON.stringify(value, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
}

/**
 * Draws `section` again with `draw`, keeping the keyboard focus on the same link or button
 * (the same href or data-key) when it was inside: a refresh never throws a reader's place away.
 */
function redraw(section: HTMLElement, draw: () => void): void {
  const active = document.activeElement;
  const keyOf = (e: Element): string | null => (e as HTMLElement).dataset.key ?? e.getAttribute("href");
  const key = active && active !== section && section.contains(active) ? keyOf(active) : null;
  clear(section);
  draw();
  if (key) [...section.querySelectorAll<HTMLElement>("[data-key], a[href]")].find((e) => keyOf(e) === key)?.focus();
}

interface Poller {
  /** The banner shown while the server does not answer (the app's `.connection` note). */
  connection: HTMLElement;
  /** Words for a refusal (or "no arena here"). */
  status: HTMLElement;
  /** Greyed while what it shows cannot be brought up to date. */
  content: HTMLElement;
}

/**
 * Calls `load` now and REFRESH_MS after each answer until the page is left or the server
 * refuses for good (no arena, no such entrant). Returns the page's leave function.
 */
function poll(view: Poller, load: (options: { timeoutMs: number }) => Promise<void>): () => void {
  let stopped = false;
  let timer = 0;
  async function refresh(): Promise<void> {
    try {
      await load({ timeoutMs: CALL_TIMEOUT_MS });
      if (stopped) return;
      view.connection.hidden = true;
      view.content.classList.remove("stale");
      view.status.textContent = "";
    } catch (error) {
      if (stopped) return;
      if (noArena(error)) {
        view.connection.hidden = true;
        clear(view.content);
        view.status.textContent = t("arena.none");
        return;
      }
      const lost = unreachable(error);
      view.connection.hidden = !lost;
      view.content.classList.toggle("stale", lost);
      if (!lost) {
        view.status.textContent = explain(error);
        if (error instanceof ConnectError && error.code === Code.NotFound) return; // no such entrant: final
      }
    }
    if (!stopped) timer = window.setTimeout(() => void refresh(), REFRESH_MS);
  }
  void refresh();
  return () => {
    stopped = true;
    window.clearTimeout(timer);
  };
}

function pageParts(back: HTMLElement, title: HTMLElement): Poller & { header: HTMLElement } {
  return {
    header: h("header", { class: "top" }, back, title),
    connection: h("p", { class: "connection", role: "status", hidden: true }, t("connection.lost")),
    status: h("p", { class: "status", role: "status" }),
    content: h("div", { class: "arena" }),
  };
}

/** #/arena: the live ladder. */
export function showArena(root: HTMLElement): () => void {
  clear(root);
  const title = h("h1", {}, t("arena.title"));
  const view = pageParts(h("button", { class: "back", onclick: () => navigate("/") }, t("back.lobby")), title);
  const progress = h("p", { class: "progress", id: "a-status" }, t("arena.looking"));
  const laddersBox = h("div", { class: "col wide ladders" });
  const liveBox = h("section", { class: "col live-games" });
  const recentBox = h("section", { class: "col wide recent-games" });
  // Ladders, then the live games (beside them on a wide screen), then the recent games.
  view.content.append(progress, h("div", { class: "arena-grid ladder-page" }, laddersBox, liveBox, recentBox));
  root.append(view.header, view.connection, view.content, view.status);
  let shownArena = "";
  let shownGames = "";
  return poll(view, async (options) => {
    const [got, listed] = await Promise.all([arena.getArena({}, options), arena.listArenaGames({ limit: RECENT_GAMES }, options)]);
    const a = got.arena;
    if (!a) return;
    title.textContent = `${t("arena.title")}: ${a.name}`;
    progress.textContent = statusText(a);
    progress.dataset.status = ArenaStatus[a.status].toLowerCase();
    const arenaNow = signature(a);
    if (arenaNow !== shownArena) {
      shownArena = arenaNow;
      redraw(laddersBox, () => laddersBox.append(...a.ladders.map(ladderSection)));
      redraw(liveBox, () => renderLive(liveBox, a));
    }
    const gamesNow = signature(listed.games);
    if (gamesNow !== shownGames) {
      shownGames = gamesNow;
      redraw(recentBox, () => {
        recentBox.append(h("h2", {}, t("arena.recent")));
        recentBox.append(listed.games.length ? gameList(listed.games) : h("p", { class: "hint" }, t("arena.recentNone")));
      });
    }
  });
}

function statusText(a: Arena): string {
  const count = Number(a.gamesRated);
  if (a.status === ArenaStatus.PAUSED) return t("arena.paused", { count });
  if (a.status === ArenaStatus.STOPPING) return t("arena.stopping", { count });
  return t("arena.running", { count });
}

const STATE_WORDS: Partial<Record<EntrantState, Key>> = {
  [EntrantState.ACTIVE]: "arena.state.active",
  [EntrantState.PENDING]: "arena.state.pending",
  [EntrantState.RETIRED]: "arena.state.retired",
  [EntrantState.SUPERSEDED]: "arena.state.superseded",
};

function stateClass(state: EntrantState): string {
  return `state-${(EntrantState[state] ?? "unspecified").toLowerCase()}`;
}

/** Connected, playing now (how many games), or neither. */
function nowCell(line: LadderLine): HTMLElement {
  if (line.playing) return h("td", { class: "now" }, h("span", { class: "mark playing" }, t("arena.playingNow", { count: line.playing })));
  if (line.connected) return h("td", { class: "now" }, h("span", { class: "mark online" }, t("arena.online")));
  return h("td", { class: "now" }, h("span", { class: "mark offline" }, t("arena.offline")));
}

function entrantLink(entrant: string, version: string): HTMLElement {
  return h("a", { class: "entrant", href: `#${arenaPath(entrant)}` }, entrant, version ? h("span", { class: "version" }, `@${version}`) : null);
}

function ladderSection(ladder: Ladder): HTMLElement {
  const kabaleo = ladder.game === Game.KABALEO;
  return h("section", { class: "ladder", "data-game": gameName(ladder.game).toLowerCase() },
    h("h2", {}, t("arena.ladder", { game: gameName(ladder.game) })),
    kabaleo ? h("p", { class: "hint" }, t("arena.tables", { sizes: ladder.tableSizes.join(", ") })) : null,
    ladder.standings.length
      ? h("table", { class: "list ladder-table" },
          h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("arena.rank")), h("th", { scope: "col" }, t("arena.entrant")), h("th", { scope: "col" }, t("arena.rating")),
            h("th", { scope: "col" }, t("arena.games")), h("th", { scope: "col", class: "wins" }, t("arena.wins")), h("th", { scope: "col" }, t("arena.now")))),
          h("tbody", {}, ladder.standings.map((line) => {
            const active = line.state === EntrantState.ACTIVE;
            const word = STATE_WORDS[line.state];
            return h("tr", { class: `line ${stateClass(line.state)}${active ? "" : " inactive"}`, "data-line": lineName(line) },
              h("td", { class: "rank" }, active && line.rank ? line.rank : "–"),
              h("td", { class: "who" }, entrantLink(line.entrant, line.version), !active && word ? h("span", { class: "state-tag" }, ` (${t(word)})`) : null),
              h("td", { class: "rating" }, rating(line.rating)),
              h("td", { class: "games" }, line.games),
              h("td", { class: "wins" }, line.wins),
              nowCell(line));
          })))
      : h("p", { class: "hint" }, t("arena.noLines")));
}

function seatsText(g: ArenaGame): string {
  return g.seats.join(` ${t("arena.vs")} `);
}

function gameLine(g: ArenaGame): string {
  return t("arena.game", { number: String(g.number), game: gameName(g.game), seats: seatsText(g) });
}

function renderLive(section: HTMLElement, a: Arena): void {
  section.append(h("h2", {}, t("arena.live", { count: a.liveGames.length })));
  section.append(a.liveGames.length
    ? h("ul", { class: "plain games" }, a.liveGames.map((g) => h("li", { class: "game-live", "data-match": g.matchId },
        h("span", {}, gameLine(g)), " ",
        h("a", { class: "spectate", href: `#/match/${g.matchId}` }, t("arena.watch")))))
    : h("p", { class: "hint" }, a.status === ArenaStatus.RUNNING ? t("arena.liveNone") : t("arena.liveNoneNew")));
}

/** The seats of a rated game best first: "1. greedy +6.5 · 2. random −2.6". */
function resultText(g: ArenaGame): string {
  return g.seats.map((seat, i) => ({ seat, rank: g.ranks[i] ?? 0, delta: g.ratingChanges[i] ?? 0 }))
    .sort((x, y) => x.rank - y.rank)
    .map((s) => `${s.rank}. ${s.seat} ${change(s.delta)}`)
    .join(" · ");
}

/** Games as a list, each with a link to watch it (being played) or to replay it (over). */
function gameList(games: ArenaGame[]): HTMLElement {
  return h("ul", { class: "plain games" }, games.map((g) => {
    const playing = g.status === ArenaGameStatus.PLAYING;
    const rated = g.status === ArenaGameStatus.RATED;
    return h("li", { class: `game-done status-${(ArenaGameStatus[g.status] ?? "").toLowerCase()}`, "data-match": g.matchId },
      h("span", {}, gameLine(g)), h("br"),
      rated ? h("span", { class: "result" }, resultText(g)) : null,
      rated ? h("span", { class: "hint" }, ` (${terminationText(g.termination)}) `) : null,
      playing ? h("span", { class: "hint" }, `${t("arena.beingPlayed")} `) : null,
      g.status === ArenaGameStatus.VOID ? h("span", { class: "hint" }, `${t("arena.void")} `) : null,
      !g.matchId ? null : playing
        ? h("a", { class: "spectate", href: `#/match/${g.matchId}` }, t("arena.watch"))
        : h("a", { class: "replay", href: `#/replay/${g.matchId}` }, t("arena.replay")));
  }));
}

/** #/arena/entrant/NAME: one entrant's lines, rating history and recent games. */
export function showEntrant(root: HTMLElement, name: string): () => void {
  clear(root);
  const title = h("h1", {}, t("arena.entrantTitle", { name }));
  const view = pageParts(h("button", { class: "back", onclick: () => navigate("/arena") }, t("back.arena")), title);
  const linesBox = h("section", { class: "lines" });
  const chartBox = h("section", { class: "chart" });
  const gamesBox = h("section", { class: "recent-games" });
  view.content.append(h("div", { class: "arena-grid" }, h("div", { class: "col wide" }, linesBox, chartBox), h("div", { class: "col" }, gamesBox)));
  root.append(view.header, view.connection, view.content, view.status);
  let shown = "";
  let tableOpen = false;
  return poll(view, async (options) => {
    const [got, whole] = await Promise.all([arena.getEntrant({ name }, options), arena.getArena({}, options)]);
    const profile = got.entrant;
    if (!profile) return;
    const ladders = whole.arena?.ladders ?? [];
    const now = signature([profile, ladders.map((l) => l.standings.filter((line) => line.entrant === profile.name))]);
    if (now === shown) return;
    shown = now;
    title.textContent = t("arena.entrantTitle", { name: profile.name });
    redraw(linesBox, () => renderLines(linesBox, profile, ladders));
    tableOpen = chartBox.querySelector("details")?.open ?? tableOpen;
    redraw(chartBox, () => renderChart(chartBox, profile, tableOpen));
    redraw(gamesBox, () => {
      gamesBox.append(h("h2", {}, t("arena.recent")));
      gamesBox.append(profile.recentGames.length ? gameList(profile.recentGames) : h("p", { class: "hint" }, t("arena.recentNone")));
    });
  });
}

/**
 * The entrant's lines, read from the ladders (GetArena): a LadderLine carries no game, so the
 * profile's own list cannot tell a Pylos line from a Kabaleo one of the same version; a ladder can,
 * and gives the line's rank too.
 */
function renderLines(section: HTMLElement, profile: EntrantProfile, ladders: Ladder[]): void {
  const rows = ladders.flatMap((ladder) => ladder.standings.filter((line) => line.entrant === profile.name).map((line) => ({ game: ladder.game, line })));
  section.append(h("h2", {}, t("arena.lines")),
    rows.length ? h("table", { class: "list lines-table" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("arena.gameCol")), h("th", { scope: "col" }, t("arena.version")), h("th", { scope: "col" }, t("arena.rank")),
        h("th", { scope: "col" }, t("arena.rating")), h("th", { scope: "col" }, t("arena.games")), h("th", { scope: "col", class: "wins" }, t("arena.wins")), h("th", { scope: "col" }, t("arena.now")))),
      h("tbody", {}, rows.map(({ game, line }) => {
        const active = line.state === EntrantState.ACTIVE;
        const word = STATE_WORDS[line.state];
        return h("tr", { class: `line ${stateClass(line.state)}${active ? "" : " inactive"}`, "data-line": `${gameName(game)}:${lineName(line)}` },
          h("td", {}, gameName(game)),
          h("td", {}, line.version || "–", word ? h("span", { class: "state-tag" }, ` (${t(word)})`) : null),
          h("td", { class: "rank" }, active && line.rank ? line.rank : "–"),
          h("td", { class: "rating" }, rating(line.rating)),
          h("td", { class: "games" }, line.games),
          h("td", { class: "wins" }, line.wins),
          nowCell(line));
      })))
      : h("p", { class: "hint" }, t("arena.noLines")));
}

const SERIES_COLOURS = ["#2f63c9", "#b04e17", "#2f7d32", "#8e3fa8", "#0f7d86", "#8a6d00"];

interface Series {
  label: string;
  points: RatingPoint[];
  colour: string;
}

/**
 * One series per (game, version), points in the order the ratings changed: by when each game
 * ended (a game is rated as it ends). Not by game number: a long game seated early is rated
 * after shorter ones seated later, and the line's rating now is the one after the last to end.
 */
function seriesOf(history: RatingPoint[]): Series[] {
  const byLine = new Map<string, RatingPoint[]>();
  for (const point of history) {
    const key = `${gameName(point.game)}${point.version ? ` @${point.version}` : ""}`;
    byLine.set(key, [...(byLine.get(key) ?? []), point]);
  }
  return [...byLine].map(([label, points], i) => ({
    label,
    points: [...points].sort(byEnd),
    colour: SERIES_COLOURS[i % SERIES_COLOURS.length],
  }));
}

function byEnd(a: RatingPoint, b: RatingPoint): number {
  return Number(a.timeMs - b.timeMs) || Number(a.gameNumber - b.gameNumber);
}

/** A moment on the chart's time axis: seconds shown when the whole span is short, the day when long. */
function moment(ms: number, spanMs: number): string {
  const options: Intl.DateTimeFormatOptions = spanMs < 3_600_000
    ? { hour: "2-digit", minute: "2-digit", second: "2-digit" }
    : spanMs < 86_400_000 ? { hour: "2-digit", minute: "2-digit" } : { month: "short", day: "numeric" };
  return new Intl.DateTimeFormat(language(), options).format(new Date(ms));
}

/** Round tick values covering [low, high]: about four of them. */
function ticks(low: number, high: number): number[] {
  const raw = (high - low) / 4 || 1;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].map((m) => m * magnitude).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(low / step) * step; v <= high + 1e-9; v += step) out.push(v);
  return out;
}

let chartCount = 0;

/**
 * The rating after each rated game: x = when the game ended, y = the displayed rating, one
 * coloured line per series. For people who cannot see it: the SVG is an image named by its title,
 * described by a sentence per series, and the same figures are a table below it.
 */
function renderChart(section: HTMLElement, profile: EntrantProfile, tableOpen: boolean): void {
  section.append(h("h2", {}, t("arena.chart")));
  const series = seriesOf(profile.history);
  if (!series.length) {
    section.append(h("p", { class: "hint" }, t("arena.chartEmpty")));
    return;
  }
  // Drawn at the width it is shown (a phone's too), so that its words keep their size.
  const W = Math.max(300, Math.min(720, Math.round(section.clientWidth || 640)));
  const H = W < 500 ? 220 : 260, left = 48, right = 14, top = 14, bottom = 40;
  const all = [...profile.history].sort(byEnd);
  const xs = all.map((p) => Number(p.timeMs));
  const ys = all.map((p) => p.rating);
  let [x0, x1] = [Math.min(...xs), Math.max(...xs)];
  if (x0 === x1) [x0, x1] = [x0 - 1000, x1 + 1000];
  let [y0, y1] = [Math.min(...ys), Math.max(...ys)];
  const pad = Math.max(10, (y1 - y0) * 0.08);
  [y0, y1] = [y0 - pad, y1 + pad];
  const X = (v: number): number => left + ((v - x0) / (x1 - x0)) * (W - left - right);
  const Y = (v: number): number => top + (1 - (v - y0) / (y1 - y0)) * (H - top - bottom);
  const id = `rating-chart-${++chartCount}`;
  const summary = series.map((s) => (s.points.length === 1
    ? t("arena.seriesOne", { line: s.label, rating: rating(s.points[0].rating) })
    : t("arena.seriesMany", { line: s.label, count: s.points.length, first: rating(s.points[0].rating), last: rating(s.points[s.points.length - 1].rating) }))).join(" ");
  const yTicks = ticks(y0, y1);
  const xCount = W < 500 ? 2 : 4; // a time's label is about 90 px wide
  const xTicks = [...Array(xCount).keys()].map((i) => x0 + ((x1 - x0) * i) / (xCount - 1));
  const chart = svg("svg", { class: "rating-chart", viewBox: `0 0 ${W} ${H}`, role: "img", "aria-labelledby": `${id}-title ${id}-desc` },
    svg("title", { id: `${id}-title` }, t("arena.chartTitle", { name: profile.name })),
    svg("desc", { id: `${id}-desc` }, summary),
    yTicks.map((v) => svg("g", { class: "tick y" },
      svg("line", { x1: left, x2: W - right, y1: Y(v), y2: Y(v) }),
      svg("text", { x: left - 6, y: Y(v) + 4, "text-anchor": "end" }, rating(v)))),
    xTicks.map((v, i) => svg("g", { class: "tick x" },
      svg("line", { x1: X(v), x2: X(v), y1: H - bottom, y2: H - bottom + 5 }),
      svg("text", { x: X(v), y: H - bottom + 18, "text-anchor": i === 0 ? "start" : i === xCount - 1 ? "end" : "middle" }, moment(v, x1 - x0)))),
    svg("line", { class: "axis", x1: left, x2: W - right, y1: H - bottom, y2: H - bottom }),
    svg("text", { class: "axis-label", x: (left + W - right) / 2, y: H - 4, "text-anchor": "middle" }, t("arena.chartX")),
    series.map((s) => svg("g", { class: "series", "data-series": s.label, stroke: s.colour, fill: s.colour },
      svg("polyline", { fill: "none", "stroke-width": 2, points: s.points.map((p) => `${X(Number(p.timeMs)).toFixed(1)},${Y(p.rating).toFixed(1)}`).join(" ") }),
      s.points.map((p) => svg("circle", { class: "point", cx: X(Number(p.timeMs)).toFixed(1), cy: Y(p.rating).toFixed(1), r: 3.5 },
        svg("title", {}, t("arena.pointTitle", { number: String(p.gameNumber), rating: rating(p.rating) })))))),
  );
  const legend = h("ul", { class: "plain legend" }, series.map((s) => h("li", {},
    h("span", { class: "swatch", style: `background:${s.colour}`, "aria-hidden": "true" }), " ",
    t("arena.seriesLegend", { line: s.label, rating: rating(s.points[s.points.length - 1].rating) }))));
  const table = h("details", { class: "history-table", open: tableOpen },
    h("summary", {}, t("arena.historyTable")),
    h("table", { class: "list" },
      h("thead", {}, h("tr", {}, h("th", { scope: "col" }, t("arena.gameNumber")), h("th", { scope: "col" }, t("arena.ended")), h("th", { scope: "col" }, t("arena.line")), h("th", { scope: "col" }, t("arena.rating")))),
      h("tbody", {}, [...all].reverse().map((p) => h("tr", {},
        h("td", {}, String(p.gameNumber)),
        h("td", {}, new Intl.DateTimeFormat(language(), { dateStyle: "short", timeStyle: "medium" }).format(new Date(Number(p.timeMs)))),
        h("td", {}, `${gameName(p.game)}${p.version ? ` @${p.version}` : ""}`),
        h("td", {}, rating(p.rating)))))));
  section.append(h("figure", { class: "rating-figure" }, chart, legend), table);
}
