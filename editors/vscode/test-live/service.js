// The extension against a LIVE service with the REAL client: the install line of the service's own
// /downloads/, a bundle sent for a hang verdict, and "Was this right?" recorded by the service.
// Outside test/, so `npm test` leaves it out: tests/editors/test_vscode_service.py (`make
// vscode`) runs it with `node --test`, after starting the service (a Django live server on
// PostgreSQL) and making a token, and then checks what the service stored. Alone, it skips.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { execFileSync } = require("node:child_process");
const { vscode, fake, load, realClient, repo, tmp } = require("../test/helpers");

const { installLine } = load("client.js");
const ext = load("extension.js");

const SERVICE = process.env.ROOTCAUSE_TEST_SERVICE;
const TOKEN = process.env.ROOTCAUSE_TEST_TOKEN;
const WHEEL = process.env.ROOTCAUSE_TEST_WHEEL; // the wheel the service's /downloads/ serves
const SEEN = process.env.ROOTCAUSE_TEST_SEEN; // where the ids go, for the Python side to check
const client = realClient();
const skip = SERVICE && TOKEN && WHEEL && SEEN && client ? false : "needs a live service: run by tests/editors/test_vscode_service.py (make vscode)";
// 6 ranks of a gloo job; rank 2 blocks in its DataLoader's dataset fetch (bench/hangruns, dev).
const ARCHIVE = path.join(repo, "bench/hangruns/corpus/dev/dataloader__0.tar.gz");
const seen = {};

test.beforeEach(() => fake.reset());
test.after(() => {
  if (SEEN) fs.writeFileSync(SEEN, JSON.stringify(seen));
});

function activate(settings, token) {
  Object.assign(fake.state.settings, settings);
  if (token) fake.state.secrets.set("rootcause.token", token);
  return ext.activate(fake.fakeContext());
}

test("the install line is the one the service's /downloads/ gives, and the notification copies it", { skip }, async () => {
  const line = `pip install ${SERVICE}/downloads/${WHEEL}`;
  assert.equal(await installLine(SERVICE), line);
  assert.equal(await installLine(`${SERVICE}/`), line);
  activate({ "rootcause.path": path.join(tmp, "no-client-here"), "rootcause.server": SERVICE });
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "boom\n");
  fake.state.answers.push("Copy install command");
  const out = await vscode.commands.executeCommand("rootcause.diagnoseFile");
  assert.equal(out.kind, "missing");
  const [m] = fake.state.messages;
  assert.ok(m.text.includes(`Install the light client from ${SERVICE} with “${line}”`), m.text);
  assert.deepEqual(m.items, ["Open setting", "Copy install command"]);
  assert.equal(fake.state.clipboard, line);
});

test("a member's bundle: uploaded as one archive, the hang in the panel, then Right and Wrong recorded", { skip }, async () => {
  activate({ "rootcause.path": client, "rootcause.server": `${SERVICE}/`, "rootcause.timeoutSeconds": 300 }, TOKEN);
  const out = await vscode.commands.executeCommand("rootcause.diagnoseBundle", vscode.Uri.file(ARCHIVE));
  assert.equal(out.ok, true, out.message);
  assert.equal(out.mode, "server");
  assert.equal(out.result.failure.slug, "rank-stalled-before-collective");
  assert.equal(out.result.initiating_rank, 2);
  assert.equal(out.result.hang.culprits[0].rank, 2);
  const html = fake.state.panels[0].webview.html;
  assert.match(html, /<li class="rank culprit" title="rank 2: culprit" data-rank="2">2<\/li>/);
  assert.match(html, /in <code>fetch_remote_sample<\/code> at <code>program\.py:50<\/code>/);
  assert.ok(html.includes(`href="${SERVICE}/diagnoses/${out.result.id}/"`), "the diagnosis in the history");
  seen.member = out.result.id;

  fake.state.answers.push("Right");
  let said = await vscode.commands.executeCommand("rootcause.feedback");
  assert.equal(said.ok, true, said.message);
  // a right verdict labels the log with the diagnosed class
  assert.equal(said.message, `recorded: right (the right class: rank-stalled-before-collective) on diagnosis ${out.result.id}; thank you`);
  assert.match(fake.state.panels[0].webview.html, /Sent: this diagnosis was <strong>right<\/strong>/);
  // changed to wrong from the panel's button, with the right class and a note
  fake.state.answers.push("nccl-timeout", "the peer's NIC went down");
  fake.state.panels[0].send({ type: "feedback", which: "wrong" });
  await waitFor(() => /Sent: this diagnosis was <strong>wrong<\/strong>/.test(fake.state.panels[0].webview.html));
  assert.equal(fake.state.messages.at(-1).text, `rootcause: recorded: wrong (the right class: nccl-timeout) on diagnosis ${out.result.id}; thank you`);
  // a class the catalogue does not have: the service's refusal, as the client says it
  fake.state.answers.push("Wrong…", "no-such-class", "");
  said = await vscode.commands.executeCommand("rootcause.feedback");
  assert.equal(said.ok, false);
  assert.equal(said.kind, "refused");
  assert.match(fake.state.messages.at(-1).text, /refused the answer \(400\)/);
});

test("a visitor's bundle (a folder, no token): the link carries its key, and Right is recorded with it", { skip }, async () => {
  const folder = fs.mkdtempSync(path.join(tmp, "visitor-job-"));
  execFileSync("tar", ["-xzf", ARCHIVE, "-C", folder]);
  activate({ "rootcause.path": client, "rootcause.server": SERVICE, "rootcause.timeoutSeconds": 300 });
  const out = await vscode.commands.executeCommand("rootcause.diagnoseBundle", vscode.Uri.file(folder));
  assert.equal(out.ok, true, out.message);
  assert.equal(out.result.initiating_rank, 2);
  assert.match(out.result.link, new RegExp(`^${SERVICE}/diagnoses/${out.result.id}/\\?key=.+`));
  seen.visitor = out.result.id;
  fake.state.panels[0].send({ type: "feedback", which: "right" });
  await waitFor(() => /Sent: this diagnosis was <strong>right<\/strong>/.test(fake.state.panels[0].webview.html));
});

async function waitFor(check, ms = 60_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out; messages: ${JSON.stringify(fake.state.messages)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
