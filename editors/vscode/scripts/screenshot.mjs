// media/screenshot.png: the results panel for a multi-rank log, rendered by Chromium from the same
// HTML the extension puts in its webview (html.ts), with a result from the real client.
//   ROOTCAUSE_CLIENT=…/.venv/bin/rootcause npm run screenshot    (needs `chromium` on the PATH)
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const repo = path.resolve(root, "../..");
const require = createRequire(import.meta.url);
const { runClient } = require(path.join(root, "out/client.js"));
const { renderHtml, encyclopediaLink, newNonce } = require(path.join(root, "out/html.js"));

const client = process.env.ROOTCAUSE_CLIENT || path.join(repo, ".venv/bin/rootcause");
const log = path.join(repo, process.argv[2] || "tests/logs/ddp-unused-parameters/rank2_expert_skipped_nccl_peers_timeout.log");
const [width, height] = (process.env.SIZE || "1100,1480").split(",").map(Number);

const out = await runClient({ client, text: readFileSync(log, "utf8"), timeoutMs: 120_000, maxBytes: 64 << 20 });
if (!out.ok) throw new Error(out.message);
const html = renderHtml(out.result, {
  cspSource: "'self'",
  nonce: newNonce(),
  sourceLabel: path.basename(log),
  canJump: true,
  mode: out.mode,
  encyclopediaUrl: encyclopediaLink(out.result.encyclopedia_url, "https://rootcause.example.com"),
});
const dir = mkdtempSync(path.join(tmpdir(), "rootcause-shot-"));
try {
  const page = path.join(dir, "panel.html");
  writeFileSync(page, html);
  const target = path.join(root, "media/screenshot.png");
  execFileSync(process.env.CHROMIUM || "chromium", [
    "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--hide-scrollbars", `--user-data-dir=${path.join(dir, "profile")}`,
    `--screenshot=${target}`, `--window-size=${width},${height}`, `file://${page}`,
  ], { stdio: ["ignore", "ignore", "pipe"], timeout: 60_000 });
  if (!existsSync(target)) throw new Error("chromium wrote no screenshot");
  console.log(`${target} (${width}x${height}) from ${path.relative(repo, log)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
