// The web client over HTTPS: `ziggurat tls init` makes a CA and a server certificate, `ziggurat
// serve --tls-cert/--tls-key` serves the page and the API with it, and the browser plays there.
// Chromium is told to accept the certificate (its own store cannot be given ca.pem here); that
// the chain is sound is checked from Node, which trusts ca.pem and nothing else.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { request } from "node:https";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, test } from "node:test";
import { ZIGGURAT, launchBrowser, shot, startServer } from "./harness.mjs";

let certs;
let server;
let chrome;
before(async () => {
  certs = mkdtempSync(join(tmpdir(), "ziggurat-web-tls-"));
  execFileSync(ZIGGURAT, ["tls", "init", "--dir", certs, "--host", "ziggurat.lan"], { stdio: "pipe" });
  server = await startServer({ extra: ["--tls-cert", join(certs, "server.pem"), "--tls-key", join(certs, "server.key")] });
  chrome = await launchBrowser();
});
after(async () => {
  await chrome?.close();
  await server?.stop();
  if (certs) rmSync(certs, { recursive: true, force: true });
});

/** A Connect JSON call over HTTPS from Node, trusting `ca` only. */
function connectCall(url, method, body, ca) {
  return new Promise((resolve, reject) => {
    const call = request(`${url}ziggurat.v1.MatchService/${method}`, {
      method: "POST", headers: { "content-type": "application/json" }, ca,
    }, (response) => {
      let text = "";
      response.on("data", (chunk) => { text += chunk; });
      response.on("end", () => resolve(JSON.parse(text)));
    });
    call.on("error", reject);
    call.end(JSON.stringify(body));
  });
}

test("the browser plays over HTTPS, and plain HTTP gets nothing", { timeout: 90_000 }, async () => {
  assert.match(server.url, /^https:\/\/127\.0\.0\.1:\d+\/$/);
  const ca = readFileSync(join(certs, "ca.pem"));

  // Unless told to accept the certificate, Chromium refuses the page: the TLS is real.
  const strict = await (await chrome.browser.newContext()).newPage();
  await assert.rejects(strict.goto(server.url), /ERR_CERT_AUTHORITY_INVALID/);

  const context = await chrome.browser.newContext({ ignoreHTTPSErrors: true });
  const page = await context.newPage();
  const calls = [];
  page.on("request", (r) => { if (r.url().includes("/ziggurat.v1.")) calls.push(r.url()); });
  await page.goto(server.url);
  await page.fill("#name", "Ada");
  await page.selectOption("#game", "pylos");
  await page.selectOption("select.opponent", "random");
  await page.click("#create");
  await page.waitForURL(/#\/match\//);
  const matchId = page.url().split("/").pop();
  await page.waitForSelector("svg.pyramid");
  // One move of ours (SubmitMove over HTTPS), in once the server's event lists it.
  const target = await page.waitForSelector("svg.pyramid .place.target", { timeout: 30_000 });
  const ply = await page.$$eval("ol.moves li", (items) => items.length);
  await target.click();
  await page.waitForFunction((n) => document.querySelectorAll("ol.moves li").length > n, ply);
  await shot(page, "tls-match-page");
  assert.equal(await page.evaluate(() => window.location.protocol), "https:");
  for (const method of ["JoinMatch", "WatchMatch", "SubmitMove"]) {
    assert.ok(calls.some((u) => u.includes(`/ziggurat.v1.MatchService/${method}`)), `${method}: ${calls.join("\n")}`);
  }
  assert.ok(calls.every((u) => u.startsWith("https://")), calls.join("\n"));

  // The same match over HTTPS from Node, trusting ca.pem only (by IP and by name).
  const byIp = await connectCall(server.url, "GetMatch", { matchId }, ca);
  assert.equal(byIp.match.matchId, matchId);
  const byName = await connectCall(server.url.replace("127.0.0.1", "localhost"), "GetMatch", { matchId }, ca);
  assert.equal(byName.match.matchId, matchId);

  // Plain HTTP to the same port: no page, no API.
  const plain = await context.newPage();
  await assert.rejects(plain.goto(server.url.replace("https:", "http:")), /ERR_EMPTY_RESPONSE|ERR_CONNECTION_RESET|ERR_CONNECTION_CLOSED|ERR_INVALID_HTTP_RESPONSE/);
});
