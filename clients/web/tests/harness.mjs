// Test harness: a real `ziggurat serve` subprocess (loopback, port 0, its own database file)
// and Debian's chromium driven by playwright-core, with a fresh profile per browser.
// Screenshots go to clients/web/test-output/ (gitignored).
import { spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const repo = join(here, "../../..");
export const SHOTS = join(here, "../test-output");
export const ZIGGURAT = process.env.ZIGGURAT ?? join(repo, ".venv/bin/ziggurat");
const CHROMIUM = process.env.CHROMIUM ?? "/usr/bin/chromium";

/** A free TCP port on loopback (for a server restarted on the same ports). */
export async function freePort() {
  const { createServer } = await import("node:net");
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** `ziggurat serve` on loopback: port 0 for both by default; `restart()` needs fixed ports;
 * `extra`: more `serve` arguments (e.g. --tls-cert; the web client is then https://). */
export async function startServer({ port = 0, httpPort = 0, extra = [] } = {}) {
  const dir = mkdtempSync(join(tmpdir(), "ziggurat-web-test-"));
  const server = {
    dir,
    stderrText: "",
    stderr: () => server.stderrText,
    async launch() {
      const child = spawn(ZIGGURAT, ["serve", "--host", "127.0.0.1", "--port", String(port), "--http-port", String(httpPort), "--db", join(dir, "z.db"), "--no-mdns", "--grace", "1", ...extra], {
        stdio: ["ignore", "pipe", "pipe"],
      });
      child.stderr.on("data", (chunk) => { server.stderrText += chunk; });
      const lines = await new Promise((resolve, reject) => {
        let out = "";
        const timer = setTimeout(() => reject(new Error(`server did not start: ${server.stderrText}`)), 30000);
        child.stdout.on("data", (chunk) => {
          out += chunk;
          if (/web client on https?:\/\/\S+\//.test(out)) {
            clearTimeout(timer);
            resolve(out);
          }
        });
        child.on("exit", (code) => reject(new Error(`server exited (${code}): ${server.stderrText}`)));
      });
      server.child = child;
      server.grpc = /ziggurat listening on (\S+)/.exec(lines)[1];
      server.url = /web client on (https?:\/\/\S+\/)/.exec(lines)[1];
    },
    /** SIGTERM (graceful: streams end with SERVER_SHUTTING_DOWN), and wait for the exit. */
    async halt() {
      const child = server.child;
      server.child = null;
      if (!child || child.exitCode !== null) return;
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    },
    /** SIGSTOP: the process is frozen; its sockets stay open and nothing answers (a hung server,
     * a network that drops everything). `resume()` (SIGCONT) lets it run on. */
    pause() {
      server.child.kill("SIGSTOP");
    },
    resume() {
      server.child.kill("SIGCONT");
    },
    /** Stop, then start again on the same database and ports. */
    async restart() {
      await server.halt();
      await server.launch();
    },
    async stop() {
      server.child?.kill("SIGCONT"); // a paused server could not hear SIGTERM's request to drain
      await server.halt();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await server.launch();
  return server;
}

// playwright's launch() always gives chromium a fresh, temporary --user-data-dir of its own
// (it refuses one in args), so every run starts from an empty profile.
export async function launchBrowser() {
  const browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
      "--disable-background-networking", "--disable-component-update", "--disable-sync",
    ],
  });
  return {
    browser,
    async close() {
      await browser.close();
    },
  };
}

let counter = 0;
export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  counter += 1;
  const file = join(SHOTS, `${String(counter).padStart(2, "0")}-${name}.png`);
  await page.screenshot({ path: file, fullPage: true });
  return file;
}

/** Every byte of every API response this page receives, teed off fetch before the app runs. */
export const RECORD_BYTES = `(() => {
  const chunks = [];
  let next = 0;
  window.__zigChunks = chunks;
  const original = window.fetch.bind(window);
  window.fetch = async (...args) => {
    const response = await original(...args);
    const url = String(args[0] && args[0].url ? args[0].url : args[0]);
    if (!url.includes("/ziggurat.v1.MatchService/") || !response.body) return response;
    const id = next++;
    const [mine, theirs] = response.body.tee();
    (async () => {
      const reader = mine.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        chunks.push({ id, url, bytes: Array.from(value) });
      }
    })();
    return new Response(theirs, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
})();`;

/** A MatchService call in Connect's JSON, as any program could make it: the answer's JSON. */
export async function callApi(server, method, body, token) {
  const headers = { "content-type": "application/json", ...(token ? { authorization: `Bearer ${token}` } : {}) };
  const response = await fetch(`${server.url}ziggurat.v1.MatchService/${method}`, { method: "POST", headers, body: JSON.stringify(body) });
  const json = await response.json();
  if (response.status !== 200) throw new Error(`${method}: ${JSON.stringify(json)}`);
  return json;
}

/** A page that holds `ticket`'s seat (as if this browser had joined): its localStorage has it. */
export async function pageWithSeat(chrome, viewport, ticket) {
  const context = await chrome.browser.newContext({ viewport });
  if (ticket) {
    await context.addInitScript((t) => {
      const seats = JSON.parse(localStorage.getItem("ziggurat.seats") ?? "{}");
      seats[t.matchId] = t;
      localStorage.setItem("ziggurat.seats", JSON.stringify(seats));
    }, ticket);
  }
  return context.newPage();
}

export function sleep(ms) {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Bundles tests/secrecy.ts (generated protobuf code included) for node; returns its module. */
export async function loadSecrecy() {
  const { build } = await import("esbuild");
  mkdirSync(SHOTS, { recursive: true });
  const outfile = join(SHOTS, "secrecy.mjs");
  await build({ entryPoints: [join(here, "secrecy.ts")], bundle: true, platform: "node", format: "esm", outfile, logLevel: "warning", preserveSymlinks: true });
  return import(outfile);
}

/** The message catalogues (src/locales/*.ts) and i18n.ts's format and pickLanguage, bundled
 * for node: { en, ro, hu, eu, format, pickLanguage }. */
export async function loadCatalogues() {
  const { build } = await import("esbuild");
  const entry = ["en", "ro", "hu", "eu"].map((l) => `export { ${l} } from './src/locales/${l}.ts';`).join(" ")
    + " export { format, pickLanguage } from './src/i18n.ts';";
  const out = await build({ stdin: { contents: entry, resolveDir: join(here, ".."), loader: "ts" }, bundle: true, write: false, format: "esm", platform: "node", logLevel: "warning" });
  return import(`data:text/javascript;base64,${Buffer.from(out.outputFiles[0].text).toString("base64")}`);
}
