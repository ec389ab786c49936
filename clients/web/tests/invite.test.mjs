// Inviting a remote bot from the browser: a `ziggurat bot random --remote` process connected to
// the server (BotService.ConnectBot over gRPC), a person in the browser sees it among the
// connected bots (ListBots over Connect), in the lobby's opponent choices and on the waiting
// match's page, invites it (InviteBot over Connect), and the match is played to the end. The
// match is Pylos's `beginner` variant: no recovery, so the rules bound the game at 50 plies
// (BEGINNER_MAX_PLIES says why), where a `standard` game against random moves has no bound a
// test can use and ran past the old cap of 200 rounds of clicks in about 1 run in 30.
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { after, before, test } from "node:test";
import { ZIGGURAT, launchBrowser, shot, sleep, startServer } from "./harness.mjs";
import { BEGINNER_MAX_PLIES, clickToTheEnd } from "./pylos-clicks.mjs";

let server;
let chrome;
let bot;
let botLog = "";
before(async () => {
  server = await startServer();
  chrome = await launchBrowser();
  bot = spawn(ZIGGURAT, ["bot", "random", "--remote", "--server", server.grpc, "--name", "robo",
    "--bot-token", "robo-secret", "--games", "pylos", "--max-matches", "1"], { stdio: ["ignore", "pipe", "pipe"] });
  bot.stdout.on("data", (chunk) => { botLog += chunk; });
  bot.stderr.on("data", (chunk) => { botLog += chunk; });
});
after(async () => {
  if (bot && bot.exitCode === null) {
    bot.kill("SIGTERM");
    await new Promise((resolve) => bot.once("exit", resolve));
  }
  await chrome?.close();
  await server?.stop();
});

test("a person invites a connected remote bot from the browser and plays it to the end", { timeout: 240_000 }, async () => {
  const page = await chrome.browser.newPage({ viewport: { width: 1200, height: 860 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(server.url);
  await page.fill("#name", "Ada");
  await page.selectOption("#game", "pylos");
  await page.selectOption("#option-variant", { label: "beginner (no recovery)" });
  // The lobby offers the connected bot for the open seat (it appears within a refresh or two).
  await page.waitForSelector('select.opponent option[value="remote:robo"]', { state: "attached", timeout: 30_000 });
  const groups = await page.$$eval("select.opponent optgroup", (gs) => gs.map((g) => g.label));
  assert.deepEqual(groups, ["built-in bots (run by the server)", "connected remote bots"]);
  await page.selectOption("select.opponent", "remote:robo");
  await shot(page, "invite-lobby-offers-remote-bot");
  // Create with the seat open, then invite from the waiting match's page.
  await page.selectOption("select.opponent", "");
  await page.click("#create");
  await page.waitForSelector('button.invite-bot[data-bot="robo"]');
  await shot(page, "invite-waiting-match");
  // Only the browser that created the match (it holds the creator token) is offered the invitation:
  // another browser on the same page sees the built-in bots but no connected bot to invite.
  const stranger = await chrome.browser.newPage({ viewport: { width: 1200, height: 860 } });
  await stranger.goto(page.url());
  await stranger.waitForSelector("button.add-bot");
  await sleep(1000); // ListBots has answered by now on the creator's page; nothing may appear here
  assert.equal(await stranger.$$eval("button.invite-bot", (buttons) => buttons.length), 0);
  await shot(stranger, "invite-not-offered-to-others");
  await stranger.close();
  await page.click('button.invite-bot[data-bot="robo"]');
  await page.waitForSelector("svg.pyramid");
  const seats = await page.$$eval(".seats li .name", (names) => names.map((n) => n.textContent));
  assert.ok(seats.includes("robo"), `the bot took the other seat: ${seats}`);
  assert.ok(seats.includes("Ada (you)"), `${seats}`);
  await clickToTheEnd(page, BEGINNER_MAX_PLIES);
  await page.waitForSelector(".end .result");
  await shot(page, "invite-end-screen");
  assert.match(await page.textContent(".end .result"), /wins|No winner|Shared|Draw/);
  assert.match(await page.textContent(".end .why"), /^The game ended /);
  assert.match(await page.textContent(".end .seed"), /matches the commitment/);
  const played = await page.$$eval("ol.moves li", (items) => items.map((i) => i.textContent));
  assert.ok(played.some((m) => m.startsWith("Light")) && played.some((m) => m.startsWith("Dark")), "both sides moved");
  assert.ok(played.every((m) => !m.includes("x")), `no ball was taken back in the beginner variant: ${played}`);
  // The remote bot is free again: InviteBot counts the match against its max_matches until the end.
  let robo;
  for (let i = 0; i < 50; i++) {
    const listed = await (await fetch(`${server.url}ziggurat.v1.BotService/ListBots`, {
      method: "POST", headers: { "content-type": "application/json" }, body: "{}",
    })).json();
    robo = listed.bots.find((b) => b.name === "robo");
    if (!robo?.activeMatches) break;
    await sleep(100);
  }
  assert.ok(robo, `the bot is still connected: ${botLog}`);
  assert.equal(robo.activeMatches ?? 0, 0);
  assert.equal(bot.exitCode, null, `the bot process is still running: ${botLog}`);
  assert.deepEqual(errors, []);
});
