// A bundle's hang in the panel: the REAL client's result for a real hung job of the repository
// (`rootcause diagnose BUNDLE --offline --json`) passes the result check, and the panel shows the
// verdict, the rank map with the culprit, and the grouped stacks with the culprit's frame.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const path = require("node:path");
const { execFileSync } = require("node:child_process");
const { load, realClient, repo } = require("./helpers");

const { renderHtml } = load("html.js");
const { resultProblem, rankStates, parseRanks } = load("result.js");

const client = realClient();
const skip = client ? false : "no client: set ROOTCAUSE_CLIENT (make vscode does) or create the repository's .venv";
// 6 ranks of a gloo job; rank 2 blocks in its DataLoader's dataset fetch (bench/hangruns, dev).
const BUNDLE = path.join(repo, "bench/hangruns/corpus/dev/dataloader__0.tar.gz");
const ctx = { cspSource: "vscode-webview://x", nonce: "abc123", sourceLabel: "dataloader__0.tar.gz", canJump: false, mode: "offline", encyclopediaUrl: null };

function diagnose(file) {
  try {
    return execFileSync(client, ["diagnose", file, "--offline", "--json"], { encoding: "utf8", timeout: 120_000 });
  } catch (error) {
    if (error.status === 1) return error.stdout; // 1: a failure was diagnosed
    throw error;
  }
}

test("parseRanks reads the section's ranges", () => {
  assert.deepEqual(parseRanks("0-2, 5, 7-8"), [0, 1, 2, 5, 7, 8]);
  assert.deepEqual(parseRanks(""), []);
});

test("a real bundle's hang: the verdict, the rank map and the culprit's frame", { skip }, () => {
  const result = JSON.parse(diagnose(BUNDLE));
  assert.equal(resultProblem(result), null);
  assert.equal(result.hang.verdict, "rank-stalled-before-collective");
  assert.deepEqual(rankStates(result.hang), ["waiting", "waiting", "culprit", "waiting", "waiting", "waiting"]);

  const html = renderHtml(result, ctx);
  assert.match(html, /<code>rank-stalled-before-collective<\/code> on 6 ranks/);
  assert.match(html, /<li class="rank culprit" title="rank 2: culprit" data-rank="2">2<\/li>/);
  assert.equal((html.match(/class="rank waiting"/g) || []).length, 5);
  const culpritRow = /<tr class="initiating">(.*?)<\/tr>/.exec(html)[1];
  assert.match(culpritRow, /rank 2<\/td><td>in <code>fetch_remote_sample<\/code> at <code>program\.py:50<\/code>/);
  assert.match(culpritRow, /data loading/);
  assert.ok(!html.includes("<h2>Ranks</h2>"), "the rank map replaces the per-rank table");
  assert.ok(!/\s(src|style)=/.test(html.replace(/<meta[^>]+>/, "")), "no src or style attributes");
});

test("a hang section that is not one is refused", () => {
  const { minimalResult } = require("./helpers");
  assert.equal(resultProblem(minimalResult({ hang: { verdict: "x" } })), "bad hang section");
  const bad = { verdict: "x", world_size: 2, culprits: [{ rank: "2" }], stacks: [], last_collectives: [], missing: [] };
  assert.equal(resultProblem(minimalResult({ hang: bad })), "bad hang culprit");
});
