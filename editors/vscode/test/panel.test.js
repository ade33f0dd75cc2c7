// The panel's HTML (escaping, CSP, what it shows) and its messages (jump, copy, run asks first,
// links), and the Problems built from a result.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { vscode, fake, load, fakeClient, minimalResult } = require("./helpers");

const { renderHtml, escapeHtml, encyclopediaLink } = load("html.js");
const { lineProblems } = load("diagnostics.js");
const ext = load("extension.js");

const ctx = { cspSource: "vscode-webview://x", nonce: "abc123", sourceLabel: "train.log", canJump: true, mode: "offline", encyclopediaUrl: "https://rootcause.example.com/encyclopedia/activation-oom/" };
const EVIL = `<script>alert("x")</script><img src=x onerror=alert(1)>`;

const multi = minimalResult({
  failure: { slug: "ddp-unused-parameters", title: "DDP Unused Parameters", category: "distributed", confidence: 0.97 },
  initiating_rank: 2,
  ranks: [
    { rank: 0, slug: "nccl-timeout", first_error_line: 28, collateral: true },
    { rank: 2, slug: "ddp-unused-parameters", first_error_line: 23, collateral: false },
    { rank: 3, slug: "nccl-timeout", first_error_line: 30, collateral: true },
  ],
  collateral: [{ slug: "nccl-timeout", ranks: [0, 3] }],
  evidence: [{ line: 23, text: "RuntimeError: Expected to have finished reduction" }, { line: 26, text: "Parameter indices 61 62" }],
  missing_facts: ["timestamps"],
});

test("escapeHtml", () => {
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
  assert.equal(escapeHtml(null), "");
});

test("log text holding <script> and markup stays text everywhere it appears", () => {
  const r = minimalResult({
    failure: { slug: `x"><script>1</script>`, title: EVIL, category: "memory", confidence: 0.5 },
    root_cause: EVIL,
    evidence: [{ line: 3, text: EVIL }],
    ranks: [{ rank: 0, slug: EVIL, first_error_line: 3, collateral: true }],
    collateral: [{ slug: EVIL, ranks: [0] }],
    missing_facts: [EVIL],
    remediation: { steps: [EVIL], command: EVIL, verification_command: EVIL, verification_expect: EVIL },
    masking: { [EVIL]: 1 },
  });
  const html = renderHtml(r, { ...ctx, sourceLabel: EVIL });
  assert.equal(html.match(/<script/g).length, 1, "only the panel's own script element");
  assert.equal(html.match(/<img/g), null);
  assert.ok(html.includes("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;"));
  assert.ok(!html.includes(`"><script>`));
});

test("strict CSP: nothing remote, only the nonce'd script and style, no style attributes", () => {
  const html = renderHtml(multi, ctx);
  const csp = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)[1];
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-abc123'(;|$)/);
  assert.match(csp, /style-src 'nonce-abc123'(;|$)/);
  assert.ok(!csp.includes("unsafe"));
  assert.ok(!/\s(src|style)=/.test(html.replace(/<meta[^>]+>/, "")), "no src or style attributes");
  assert.equal((html.match(/<script nonce="abc123">/g) || []).length, 1);
  assert.ok(!/<link|@import|url\(/.test(html));
});

test("the panel shows class, confidence, root cause, ranks, collateral, evidence, missing facts, fix and link", () => {
  const html = renderHtml(multi, ctx);
  for (const s of ["DDP Unused Parameters", "97%", "Root cause", "Initiating rank: <strong>2</strong>", "Collateral failures",
    "on ranks 0, 3", "Missing facts", "timestamps", "Lower the batch size.", "echo fix", "echo verify",
    'data-action="copy" data-which="command"', 'data-action="run" data-which="verification"',
    "https://rootcause.example.com/encyclopedia/activation-oom/", "Diagnosed on this machine"]) {
    assert.ok(html.includes(s), s);
  }
  assert.match(html, /<tr class="initiating"><td>2<\/td>/);
  assert.ok(html.includes('data-action="reveal" data-line="26"'));
  assert.ok(!renderHtml(multi, { ...ctx, canJump: false }).includes('data-action="reveal"'));
  const none = renderHtml(minimalResult({ outcome: "no_match", failure: null, root_cause: null, remediation: undefined, encyclopedia_url: null }), { ...ctx, encyclopediaUrl: null });
  assert.match(none, /No known failure found/);
  assert.ok(!none.includes("Encyclopedia"));
});

test("the confidence in words beside the figure; a possible one says what would decide it, marked", () => {
  const certain = minimalResult({
    failure: { slug: "s", title: "T", category: "memory", confidence: 0.97, confidence_level: "certain", confidence_words: "certain" },
  });
  const html = renderHtml(certain, ctx);
  assert.ok(html.includes('<strong>97%</strong></div>'));
  assert.ok(html.includes('<div class="conf-words">certain</div>'));
  const low = minimalResult({
    failure: {
      slug: "s", title: "T", category: "memory", confidence: 0.41, confidence_level: "possible",
      confidence_words: "possible — confirm with rank 1's own output: <its traceback>",
    },
  });
  const lowHtml = renderHtml(low, ctx);
  assert.ok(lowHtml.includes('<div class="conf-words possible">possible — confirm with rank 1&#39;s own output: &lt;its traceback&gt;</div>'));
  // a result from a client older than the words: the figure alone
  assert.ok(!renderHtml(minimalResult(), ctx).includes(`<div class="conf-words`));
});

test("a result whose words are not text is refused", () => {
  const { resultProblem } = load("result.js");
  const bad = minimalResult({ failure: { slug: "s", title: "T", category: "memory", confidence: 0.4, confidence_words: 3 } });
  assert.equal(resultProblem(bad), "bad confidence_words");
  assert.equal(resultProblem(minimalResult()), null);
});

test("encyclopedia links: on the configured base, http(s) only", () => {
  assert.equal(encyclopediaLink("/encyclopedia/x/", "https://rc.example.org"), "https://rc.example.org/encyclopedia/x/");
  assert.equal(encyclopediaLink("/encyclopedia/x/", "http://127.0.0.1:8000/"), "http://127.0.0.1:8000/encyclopedia/x/");
  assert.equal(encyclopediaLink("javascript:alert(1)", "https://rc.example.org"), null);
  assert.equal(encyclopediaLink(null, "https://rc.example.org"), null);
});

test("Problems: error on the initiating rank's line, information on collateral ranks, evidence otherwise", () => {
  const p = lineProblems(multi, 100);
  const at = (l) => p.find((x) => x.line === l - 1 + 100);
  assert.equal(at(23).severity, "error");
  assert.match(at(23).message, /rank 2 failed first/);
  assert.equal(at(28).severity, "information");
  assert.match(at(28).message, /collateral, follows from rank 2/);
  assert.equal(at(30).severity, "information");
  assert.equal(at(26).severity, "warning");
  // a single-process log: the evidence is the error
  assert.deepEqual(lineProblems(minimalResult()).map((x) => [x.line, x.severity]), [[1, "error"]]);
});

async function diagnosed(result) {
  fake.reset();
  fake.state.settings["rootcause.path"] = fakeClient(`cat >/dev/null; echo '${JSON.stringify(result)}'; exit 1`);
  const controller = ext.activate(fake.fakeContext());
  const text = Array.from({ length: 40 }, (_, i) => `line ${i + 1}`).join("\n");
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/job.log", text, new vscode.Selection(10, 0, 39, 7));
  const out = await vscode.commands.executeCommand("rootcause.diagnoseSelection");
  assert.equal(out.ok, true, out.message);
  const panel = fake.state.panels[0];
  const send = async (m) => { panel.send(m); await new Promise((r) => setTimeout(r, 10)); };
  return { controller, panel, send };
}

test("messages: an evidence line of a selection opens the file at the line, offset by the selection", async () => {
  const { controller, send } = await diagnosed(multi);
  const uri = vscode.Uri.file("/tmp/job.log");
  assert.equal(controller.diagnostics.get(uri).find((d) => d.severity === vscode.DiagnosticSeverity.Error).range.start.line, 22 + 10);
  await send({ type: "reveal", line: 23 });
  assert.equal(fake.state.shown[0].opts.selection.start.line, 32);
  await send({ type: "reveal", line: "23); evil(" });
  await send({ type: "reveal", line: -1 });
  assert.equal(fake.state.shown.length, 1);
});

test("messages: Copy copies the session's command; Run asks first and runs only on yes", async () => {
  const { send } = await diagnosed(multi);
  await send({ type: "copy", which: "verification", command: "rm -rf /" });
  assert.equal(fake.state.clipboard, "echo verify");
  await send({ type: "run", which: "command" }); // no answer: dismissed
  const ask = fake.state.messages.find((m) => m.level === "warning");
  assert.equal(ask.options.modal, true);
  assert.equal(ask.options.detail, "echo fix");
  assert.equal(fake.state.terminals.length, 0);
  fake.state.answers.push("Run");
  await send({ type: "run", which: "command", command: "rm -rf /" });
  assert.equal(fake.state.terminals.length, 1);
  assert.deepEqual(fake.state.terminals[0].sent, [{ text: "echo fix", addNewLine: true }]);
  await send({ type: "openEncyclopedia", url: "https://evil.example" });
  assert.deepEqual(fake.state.opened, ["https://rootcause.example.com/encyclopedia/activation-oom/"]);
  await send({ type: "nonsense" });
});
