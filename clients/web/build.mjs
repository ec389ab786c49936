// Builds the browser client into the Python package (server/ziggurat/web/static/), so that
// `ziggurat serve` ships it and serving needs no Node:
//   app.js      src/main.ts bundled and minified by esbuild (src/gen is a symbolic link to the
//               TypeScript client's generated protobuf code, clients/typescript/src/gen: one copy)
//   index.html, app.css   copied from public/
//   build-info.json   SHA-256 over every build input; tests/web/test_static_assets.py recomputes
//               it in Python, so a source edit without a rebuild fails the test suite.
// `node build.mjs --check` builds into a temporary directory and fails unless the result is
// byte-identical to what is committed (run by test.sh).
import { build } from "esbuild";
import { createHash } from "node:crypto";
import { mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync, copyFileSync, mkdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const committed = join(here, "../../server/ziggurat/web/static");
const INPUTS = ["src", "public", "package-lock.json", "build.mjs", "tsconfig.json"];

function files(path) {
  if (statSync(path).isDirectory()) return readdirSync(path).sort().flatMap((name) => files(join(path, name)));
  return [path];
}

export function inputsDigest() {
  const hash = createHash("sha256");
  for (const file of INPUTS.flatMap((p) => files(join(here, p))).sort()) {
    const name = relative(here, file).split("\\").join("/");
    hash.update(`${name}\n`);
    hash.update(readFileSync(file));
    hash.update("\n");
  }
  return hash.digest("hex");
}

async function buildInto(out) {
  mkdirSync(out, { recursive: true });
  await build({
    entryPoints: [join(here, "src/main.ts")],
    bundle: true,
    minify: true,
    format: "esm",
    target: ["es2022"],
    outfile: join(out, "app.js"),
    legalComments: "none",
    // src/gen links to the TypeScript client's generated code: resolve its imports from here.
    preserveSymlinks: true,
    logLevel: "warning",
  });
  for (const name of readdirSync(join(here, "public"))) copyFileSync(join(here, "public", name), join(out, name));
  writeFileSync(join(out, "build-info.json"), JSON.stringify({ inputs_sha256: inputsDigest() }, null, 2) + "\n");
}

if (process.argv.includes("--check")) {
  const out = mkdtempSync(join(tmpdir(), "ziggurat-web-"));
  try {
    await buildInto(out);
    const stale = readdirSync(out).filter((name) => {
      try {
        return !readFileSync(join(out, name)).equals(readFileSync(join(committed, name)));
      } catch {
        return true;
      }
    });
    const extra = readdirSync(committed).filter((name) => !readdirSync(out).includes(name));
    if (stale.length || extra.length) {
      console.error(`web build is stale: ${[...stale, ...extra].join(", ")} differ from a fresh build; run npm run build in clients/web`);
      process.exit(1);
    }
    console.log("web build: committed assets match a fresh build");
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
} else {
  rmSync(committed, { recursive: true, force: true });
  await buildInto(committed);
  console.log(`built ${relative(process.cwd(), committed)}`);
}
