// The creator of a waiting match cancels it from the lobby (CancelMatch with the creator
// token this browser kept); nobody else is offered the button.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";
import { launchBrowser, shot, startServer } from "./harness.mjs";

let server;
let chrome;
before(async () => {
  server = await startServer();
  chrome = await launchBrowser();
});
after(async () => {
  await chrome?.close();
  await server?.stop();
});

test("the creator cancels a waiting match from the lobby", { timeout: 60_000 }, async () => {
  const creator = await (await chrome.browser.newContext()).newPage();
  const other = await (await chrome.browser.newContext()).newPage();
  await creator.goto(server.url);
  await creator.fill("#name", "Ada");
  await creator.selectOption("#game", "kabaleo");
  await creator.click("#create");
  await creator.waitForURL(/#\/match\//);
  const matchId = creator.url().split("/").pop();
  await creator.click("button.back");
  const cancel = `button.cancel-match[data-match="${matchId}"]`;
  await creator.waitForSelector(cancel);
  await other.goto(server.url);
  await other.waitForSelector(`tr[data-match="${matchId}"]`);
  assert.equal(await other.$(cancel), null, "only the creator may cancel");
  await shot(creator, "lobby-cancel-own-match");
  await creator.click(cancel);
  await creator.waitForFunction((id) => document.querySelector(`tr[data-match="${id}"] td:nth-child(3)`)?.textContent === "finished", matchId);
  assert.equal(await creator.$(cancel), null);
  const match = await (await fetch(`${server.url}ziggurat.v1.MatchService/GetMatch`, {
    method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ matchId }),
  })).json();
  assert.equal(match.match.status, "MATCH_STATUS_FINISHED");
  assert.match(match.match.revealedSeed, /^[0-9a-f]{64}$/, "a cancelled match reveals its seed");
});
