// The stdin protocol with the REAL client (`rootcause diagnose - --offline --json`) on sample logs
// of the repository: the result is read whatever the exit code says (1 = diagnosed), evidence lines
// are lines of the input, a selection's lines map back to the file, and the panel shows it all.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { vscode, fake, load, realClient, repo } = require("./helpers");

const { runClient, findClient } = load("client.js");
const { lineProblems } = load("diagnostics.js");
const { renderHtml } = load("html.js");
const ext = load("extension.js");

const client = realClient();
const skip = client ? false : "no client: set ROOTCAUSE_CLIENT (make vscode does) or create the repository's .venv";
const MULTI = path.join(repo, "tests/logs/ddp-unused-parameters/rank2_expert_skipped_nccl_peers_timeout.log");
const NONE = path.join(repo, "tests/logs/none/torchrun_ddp_finished_with_warnings.log");
const run = (text) => runClient({ client, text, timeoutMs: 120_000, maxBytes: 64 << 20 });

// The client takes seconds to load its catalogue: start every run at once.
const runs = {};
test.before(() => {
  if (!client) return;
  const multi = fs.readFileSync(MULTI, "utf8");
  const lines = multi.split("\n");
  // "Diagnose this file" through the extension, with the fake vscode and the real client
  fake.reset();
  fake.state.settings["rootcause.path"] = client;
  runs.controller = ext.activate(fake.fakeContext());
  runs.multi = vscode.commands.executeCommand("rootcause.diagnoseFile", vscode.Uri.file(MULTI));
  runs.none = run(fs.readFileSync(NONE, "utf8"));
  runs.selection = run(lines.slice(19, 40).join("\n")); // lines 20..40 of the file
  runs.script = run(
    "Traceback (most recent call last):\n" +
      '  File "train.py", line 3, in <module>\n' +
      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB <script>alert(1)</script>\n",
  );
});

const venvSkip = fs.existsSync(path.join(repo, ".venv/bin/rootcause")) ? false : "no .venv in the repository";
test("the client is found in the repository's virtual environment", { skip: venvSkip }, () => {
  const found = findClient({ configured: "", workspaceFolders: [repo], env: { PATH: "" } });
  assert.equal(found.how, "virtualenv");
  assert.equal(found.path, path.join(repo, ".venv/bin/rootcause"));
});

test("a multi-rank log: diagnosed (exit 1 is not an error), initiating rank and collateral failures", { skip }, async () => {
  const out = await runs.multi;
  assert.equal(out.ok, true, out.message);
  assert.equal(out.exitCode, 1);
  assert.equal(out.mode, "offline");
  const r = out.result;
  assert.equal(r.outcome, "diagnosed");
  assert.equal(r.failure.slug, "ddp-unused-parameters");
  assert.equal(r.initiating_rank, 2);
  assert.deepEqual(r.ranks.map((x) => x.rank).sort(), [0, 1, 2, 3]);
  assert.ok(r.collateral.some((c) => c.slug === "nccl-timeout" && c.ranks.includes(0)));
  assert.ok(r.remediation && r.remediation.command && r.remediation.verification_command);
  // evidence lines are lines of what was sent
  const lines = fs.readFileSync(MULTI, "utf8").split("\n");
  assert.ok(r.evidence.length > 0);
  for (const ev of r.evidence) assert.ok(lines[ev.line - 1].startsWith(ev.text.slice(0, 30)), `line ${ev.line}: ${ev.text}`);
});

test("the real client's result says its confidence in words, and the panel shows them beside the figure", { skip }, async () => {
  const r = (await runs.multi).result;
  assert.ok(["certain", "likely", "possible"].includes(r.failure.confidence_level));
  assert.ok(r.failure.confidence_words.startsWith(r.failure.confidence_level));
  const html = renderHtml(r, { cspSource: "x", nonce: "N", sourceLabel: "t", canJump: true, mode: "offline", encyclopediaUrl: null });
  assert.ok(html.includes(`<div class="conf-words`));
  assert.ok(html.includes(r.failure.confidence_words.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&#39;")));
});

test("a log without a failure: no_match with exit 0", { skip }, async () => {
  const out = await runs.none;
  assert.equal(out.ok, true, out.message);
  assert.equal(out.exitCode, 0);
  assert.equal(out.result.outcome, "no_match");
  assert.equal(out.result.failure, null);
});

test("a selection's evidence maps back to the file's lines", { skip }, async () => {
  const [whole, part] = await Promise.all([runs.multi, runs.selection]);
  assert.equal(part.ok, true, part.message);
  const wholeErr = lineProblems(whole.result).find((p) => p.severity === "error");
  const partErr = lineProblems(part.result, 19).find((p) => p.severity === "error");
  assert.ok(wholeErr && partErr);
  assert.equal(partErr.line, wholeErr.line, "the initiating rank's line, in file coordinates");
});

test("the multi-rank result's Problems: error on rank 2's line, information on collateral ranks", { skip }, async () => {
  const r = (await runs.multi).result;
  const problems = lineProblems(r);
  const row = (rank) => r.ranks.find((x) => x.rank === rank).first_error_line - 1;
  assert.equal(problems.find((p) => p.line === row(2)).severity, "error");
  for (const rank of [0, 1, 3]) assert.equal(problems.find((p) => p.line === row(rank)).severity, "information");
});

test("a log line holding <script> comes back from the client and stays text in the panel", { skip }, async () => {
  const out = await runs.script;
  assert.equal(out.ok, true, out.message);
  assert.ok(out.result.evidence.some((e) => e.text.includes("<script>alert(1)</script>")));
  const html = renderHtml(out.result, { cspSource: "x", nonce: "N0NCE", sourceLabel: "t", canJump: true, mode: "offline", encyclopediaUrl: null });
  assert.ok(html.includes("&lt;script&gt;alert(1)&lt;/script&gt;"));
  assert.equal(html.match(/<script/g).length, 1, "only the panel's own script");
});

test("Diagnose this file through the extension with the real client: panel, Problems, jump to a line", { skip }, async () => {
  const controller = runs.controller;
  const out = await runs.multi;
  const uri = fake.state.panels.length && vscode.Uri.file(MULTI);
  assert.equal(out.ok, true, out.message);
  const html = fake.state.panels[0].webview.html;
  for (const s of ["DDP Unused Parameters", "Initiating rank", "Collateral failures", "nccl-timeout", "Run in terminal", "nothing left it"]) {
    assert.ok(html.includes(s), s);
  }
  assert.ok(html.includes("https://rootcause.example.com/encyclopedia/ddp-unused-parameters/"));
  const diags = controller.diagnostics.get(uri);
  assert.ok(diags.some((d) => d.severity === vscode.DiagnosticSeverity.Error));
  assert.ok(diags.some((d) => d.severity === vscode.DiagnosticSeverity.Information));
  // an evidence line in the page opens the file at that line
  const ev = out.result.evidence[0];
  fake.state.panels[0].send({ type: "reveal", line: ev.line });
  await new Promise((r) => setImmediate(r));
  assert.equal(fake.state.shown[0].uri.toString(), uri.toString());
  assert.equal(fake.state.shown[0].opts.selection.start.line, ev.line - 1);
  // the file changes: its Problems go
  fake.emitters.change.fire({ document: { uri }, contentChanges: [] });
  assert.equal(controller.diagnostics.has(uri), true, "a change without content changes (e.g. dirty flag) keeps them");
  fake.emitters.change.fire({ document: { uri }, contentChanges: [{ text: "x" }] });
  assert.equal(controller.diagnostics.has(uri), false);
});
