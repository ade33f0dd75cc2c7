// Error paths with fake clients (shell scripts): client missing, too old, non-zero exits, invalid
// JSON, huge input, timeout, cancel; and how the extension tells the user (one notification).
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { vscode, fake, load, fakeClient, minimalResult, tmp } = require("./helpers");

const { runClient, findClient, INSTALL_FROM_CLONE, installLine, clientArgs } = load("client.js");
const ext = load("extension.js");
const base = { text: "RuntimeError: boom\n", timeoutMs: 20_000, maxBytes: 1 << 20 };
const json = JSON.stringify(minimalResult());

test.beforeEach(() => fake.reset());

test("the command line: offline by default, the service only when configured", () => {
  assert.deepEqual(clientArgs(), ["diagnose", "-", "--offline", "--json"]);
  assert.deepEqual(clientArgs("https://rc.example.org"), ["diagnose", "-", "--json", "--server", "https://rc.example.org"]);
});

test("client missing: findClient says what it tried; spawning a missing path is kind 'missing'", async () => {
  const found = findClient({ configured: "", workspaceFolders: [tmp], env: { PATH: tmp } });
  assert.equal(found.path, null);
  assert.ok(found.tried.includes(path.join(tmp, ".venv/bin/rootcause")));
  const set = findClient({ configured: "/nope/rootcause", workspaceFolders: [], env: {} });
  assert.equal(set.path, null);
  assert.equal(set.configured, true);
  const out = await runClient({ ...base, client: path.join(tmp, "does-not-exist") });
  assert.equal(out.ok, false);
  assert.equal(out.kind, "missing");
});

test("the client on the PATH, and rootcause.path with ${workspaceFolder}", () => {
  const dir = fs.mkdtempSync(path.join(tmp, "bin-"));
  fs.writeFileSync(path.join(dir, "rootcause"), "#!/bin/sh\n", { mode: 0o755 });
  assert.deepEqual(findClient({ configured: "", workspaceFolders: [], env: { PATH: `/nope:${dir}` } }), { path: path.join(dir, "rootcause"), how: "PATH" });
  const ws = path.dirname(dir);
  const viaSetting = findClient({ configured: "${workspaceFolder}/" + path.basename(dir) + "/rootcause", workspaceFolders: [ws], env: {} });
  assert.equal(viaSetting.path, path.join(dir, "rootcause"));
});

test("client missing, through the command: one notification with where to install it from and the setting", async () => {
  fake.state.settings["rootcause.path"] = "/nope/rootcause";
  ext.activate(fake.fakeContext());
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "boom\n");
  fake.state.answers.push("Open setting");
  const out = await vscode.commands.executeCommand("rootcause.diagnoseFile");
  assert.equal(out.kind, "missing");
  assert.equal(fake.state.messages.length, 1);
  const [m] = fake.state.messages;
  assert.equal(m.level, "warning");
  // no service configured: its /downloads/ page or a clone, nothing to copy (no host is made up)
  assert.ok(m.text.includes("/downloads/ page") && m.text.includes(`“${INSTALL_FROM_CLONE}” in a clone`) && m.text.includes("rootcause.path"), m.text);
  assert.ok(!/example\.com|git\+/.test(m.text), m.text);
  assert.deepEqual(m.items, ["Open setting"]);
  assert.deepEqual(fake.state.executed.at(-1), { id: "workbench.action.openSettings", args: ["rootcause.path"] });
  assert.equal(fake.state.panels.length, 0);
});

test("client too old: an unknown option (exit 2) or a result without the typed fields", async () => {
  const old = fakeClient(`echo "Error: No such option: --offline" >&2; exit 2`);
  let out = await runClient({ ...base, client: old });
  assert.equal(out.kind, "too-old");
  out = await runClient({ ...base, client: fakeClient(`cat >/dev/null; echo '{"outcome": "diagnosed", "failure": "oom"}'; exit 1`) });
  assert.equal(out.kind, "too-old");
  // through the command: the install notification, not a bare error; the configured service does
  // not answer here, so its /downloads/ page is named and nothing is offered to copy
  // (test-live/service.js copies the line of a live service)
  fake.state.settings["rootcause.path"] = old;
  fake.state.settings["rootcause.server"] = "http://127.0.0.1:9/";
  ext.activate(fake.fakeContext());
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "boom\n");
  await vscode.commands.executeCommand("rootcause.diagnoseFile");
  assert.equal(fake.state.messages.length, 1);
  assert.match(fake.state.messages[0].text, /too old/);
  assert.match(fake.state.messages[0].text, /from http:\/\/127\.0\.0\.1:9\/downloads\/ \(the pip install line there\)/);
  assert.deepEqual(fake.state.messages[0].items, ["Open setting"]);
  assert.equal(await installLine("http://127.0.0.1:9"), null);
  assert.equal(await installLine(""), null);
});

test("exit 1 with a result is a diagnosis; exit 0 with a result too", async () => {
  for (const code of [0, 1]) {
    const out = await runClient({ ...base, client: fakeClient(`cat >/dev/null; echo '${json}'; exit ${code}`) });
    assert.equal(out.ok, true, out.message);
    assert.equal(out.exitCode, code);
  }
});

test("non-zero exits without a result: usage, quota, outage, crash, each with the client's words", async () => {
  const cases = { 2: "usage", 3: "quota", 4: "outage", 70: "failed" };
  for (const [code, kind] of Object.entries(cases)) {
    const out = await runClient({ ...base, client: fakeClient(`cat >/dev/null; echo "something went wrong $((1+${code}))" >&2; exit ${code}`) });
    assert.equal(out.ok, false);
    assert.equal(out.kind, kind, `exit ${code}`);
    assert.ok(out.message.includes(`something went wrong ${1 + Number(code)}`), out.message);
  }
  const killed = await runClient({ ...base, client: fakeClient(`kill -9 $$`) });
  assert.equal(killed.kind, "failed");
  // through the command: an error message, no panel
  fake.state.settings["rootcause.path"] = fakeClient(`cat >/dev/null; echo "service unreachable" >&2; exit 4`);
  ext.activate(fake.fakeContext());
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "boom\n");
  await vscode.commands.executeCommand("rootcause.diagnoseFile");
  assert.equal(fake.state.messages[0].level, "error");
  assert.match(fake.state.messages[0].text, /unreachable.*exit 4[^]*service unreachable/);
  assert.equal(fake.state.panels.length, 0);
});

test("invalid JSON on stdout", async () => {
  for (const body of [`echo "hello"`, `echo '{"outcome": '`, `true`]) {
    const out = await runClient({ ...base, client: fakeClient(`cat >/dev/null; ${body}; exit 1`) });
    assert.equal(out.ok, false);
    assert.equal(out.kind, "invalid-json", body);
  }
});

test("a huge selection is refused before the client starts, with what to do", async () => {
  const marker = path.join(tmp, "started");
  const client = fakeClient(`touch ${marker}; cat >/dev/null; echo '${json}'`);
  const out = await runClient({ ...base, client, text: "x".repeat((1 << 20) + 1) });
  assert.equal(out.kind, "too-large");
  assert.match(out.message, /rootcause\.maxInputMegabytes/);
  assert.equal(fs.existsSync(marker), false);
  // through "Diagnose selection"
  fake.state.settings["rootcause.path"] = client;
  fake.state.settings["rootcause.maxInputMegabytes"] = 1;
  ext.activate(fake.fakeContext());
  const big = ("a".repeat(99) + "\n").repeat(12_000);
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/big.log", big, new vscode.Selection(0, 0, 11_999, 99));
  await vscode.commands.executeCommand("rootcause.diagnoseSelection");
  assert.equal(fake.state.messages[0].level, "error");
  assert.match(fake.state.messages[0].text, /over the 1\.0 MB limit/);
  assert.equal(fs.existsSync(marker), false);
});

test("a big input within the limit reaches the client whole on stdin", async () => {
  const text = ("é".repeat(50) + "\n").repeat(80_000); // ~8 MB of UTF-8
  const [before, after] = JSON.stringify(minimalResult({ catalogue_version: "N" })).split('"N"');
  const client = fakeClient(`n=$(wc -c | tr -d ' '); echo '${before}"'"$n"'"${after}'`);
  const out = await runClient({ ...base, client, text, maxBytes: 64 << 20 });
  assert.equal(out.ok, true, out.message);
  assert.equal(Number(out.result.catalogue_version.trim()), Buffer.byteLength(text));
});

test("empty text, timeout and cancel", async () => {
  assert.equal((await runClient({ ...base, client: "/bin/false", text: " \n " })).kind, "empty");
  const slow = fakeClient(`sleep 29.417`); // sh waits for sleep: the kill must not hang on sleep's open pipes
  const t0 = Date.now();
  const out = await runClient({ ...base, client: slow, timeoutMs: 300 });
  assert.equal(out.kind, "timeout");
  assert.ok(Date.now() - t0 < 5000);
  const abort = new AbortController();
  const pending = runClient({ ...base, client: slow, signal: abort.signal });
  setTimeout(() => abort.abort(), 100);
  assert.equal((await pending).kind, "cancelled");
  // the client's own children went with it
  await new Promise((r) => setTimeout(r, 200));
  const left = require("node:child_process").spawnSync("pgrep", ["-f", "sleep 29.417"]).stdout.toString().trim();
  assert.equal(left, "", "no process of the fake client is left");
});

test("offline drops any ROOTCAUSE_TOKEN; the service gets the SecretStorage token in the environment, not argv", async () => {
  const log = path.join(tmp, "argv.txt");
  const client = fakeClient(`echo "$@" > ${log}; echo "token=$ROOTCAUSE_TOKEN" >> ${log}; cat >/dev/null; echo '${JSON.stringify(minimalResult({ id: "abc" }))}'`);
  let out = await runClient({ ...base, client, env: { ...process.env, ROOTCAUSE_TOKEN: "leak" } });
  assert.equal(out.mode, "offline");
  assert.equal(fs.readFileSync(log, "utf8"), "diagnose - --offline --json\ntoken=\n");
  // through the extension with rootcause.server set and a token in SecretStorage
  fake.state.settings["rootcause.path"] = client;
  fake.state.settings["rootcause.server"] = "https://rc.example.org/";
  const ctx = fake.fakeContext();
  fake.state.secrets.set("rootcause.token", "rc_live_secret");
  ext.activate(ctx);
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "boom\n");
  out = await vscode.commands.executeCommand("rootcause.diagnoseFile");
  assert.equal(out.mode, "server");
  assert.equal(fs.readFileSync(log, "utf8"), "diagnose - --json --server https://rc.example.org\ntoken=rc_live_secret\n");
  const html = fake.state.panels[0].webview.html;
  assert.match(html, /Sent to the service https:\/\/rc\.example\.org/);
  assert.ok(!html.includes("nothing left it"));
  assert.ok(html.includes("https://rc.example.org/encyclopedia/activation-oom/"), "the encyclopedia of the configured server");
  assert.ok(html.includes("https://rc.example.org/diagnoses/abc/"));
  assert.match(fake.state.progress.opts.title, /sending the log to https:\/\/rc\.example\.org/);
});
