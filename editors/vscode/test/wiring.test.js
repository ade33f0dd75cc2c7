// Command wiring: what package.json contributes is what activate() registers, menus name real
// commands, the code lens runs "Diagnose this file" on its document, and no runtime dependency.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { vscode, fake, load, root, fakeClient, minimalResult } = require("./helpers");

const pkg = JSON.parse(fs.readFileSync(path.join(root, "package.json"), "utf8"));
const ext = load("extension.js");

test.beforeEach(() => fake.reset());

test("every contributed command is registered by activate(), and nothing else", () => {
  ext.activate(fake.fakeContext());
  const contributed = pkg.contributes.commands.map((c) => c.command).sort();
  assert.deepEqual([...fake.state.commands.keys()].sort(), contributed);
  assert.deepEqual(Object.values(ext.COMMANDS).sort(), contributed);
});

test("menus refer to contributed commands, and the three diagnose commands are in the editor menu or palette", () => {
  const ids = new Set(pkg.contributes.commands.map((c) => c.command));
  for (const [menu, items] of Object.entries(pkg.contributes.menus)) {
    for (const item of items) assert.ok(ids.has(item.command), `${menu} names ${item.command}`);
  }
  const editor = pkg.contributes.menus["editor/context"].map((i) => i.command);
  assert.ok(editor.includes("rootcause.diagnoseSelection") && editor.includes("rootcause.diagnoseFile"));
  assert.ok(pkg.contributes.menus["terminal/context"].some((i) => i.command === "rootcause.diagnoseLastTerminalCommand"));
  // the file command offers the log extensions in the editor menu
  const when = pkg.contributes.menus["editor/context"].find((i) => i.command === "rootcause.diagnoseFile").when;
  for (const e of ["log", "txt", "out", "err"]) assert.match(when, new RegExp(e));
});

test("every setting the code reads is declared", () => {
  const declared = Object.keys(pkg.contributes.configuration.properties);
  const sources = fs.readdirSync(path.join(root, "src")).map((f) => fs.readFileSync(path.join(root, "src", f), "utf8")).join("\n");
  const read = new Set([...sources.matchAll(/\.get<[^>]+>\("(\w+)"/g)].map((m) => `rootcause.${m[1]}`));
  for (const key of read) assert.ok(declared.includes(key), `${key} is declared`);
  for (const key of ["rootcause.path", "rootcause.server", "rootcause.encyclopediaUrl", "rootcause.codeLens"]) assert.ok(read.has(key), `${key} is read`);
  assert.match(pkg.contributes.configuration.properties["rootcause.server"].markdownDescription, /SecretStorage/);
});

test("the package has no runtime dependencies, pins its dev dependencies and points at the bundle", () => {
  assert.equal(pkg.dependencies, undefined);
  for (const [name, version] of Object.entries(pkg.devDependencies)) assert.match(version, /^\d+\.\d+\.\d+$/, name);
  assert.equal(pkg.main, "./dist/extension.js");
  assert.ok(fs.existsSync(path.join(root, "dist", "extension.js")));
  const bundle = fs.readFileSync(path.join(root, "dist", "extension.js"), "utf8");
  assert.ok(!/require\("(?!vscode|node:|child_process|fs|path)[^"]+"\)/.test(bundle), "the bundle requires only vscode and Node built-ins");
  for (const f of ["README.md", "CHANGELOG.md", "LICENSE", pkg.icon]) assert.ok(fs.existsSync(path.join(root, f)), f);
  assert.ok(pkg.publisher && pkg.engines.vscode.startsWith("^1."));
});

test("the code lens is on log files and runs Diagnose this file on its document", () => {
  ext.activate(fake.fakeContext());
  assert.equal(fake.state.codeLenses.length, 1);
  const { selector, provider } = fake.state.codeLenses[0];
  assert.ok(selector.some((s) => s.pattern && s.pattern.includes("log")));
  const doc = new fake.TextDocument(vscode.Uri.file("/tmp/train.log"), "x");
  const [lens] = provider.provideCodeLenses(doc);
  assert.equal(lens.command.command, "rootcause.diagnoseFile");
  assert.equal(lens.command.arguments[0], doc.uri);
  fake.state.settings["rootcause.codeLens"] = false;
  assert.deepEqual(provider.provideCodeLenses(doc), []);
});

test("executing the registered commands reaches the client: selection, file, and file picked in a dialog", async () => {
  const result = minimalResult();
  fake.state.settings["rootcause.path"] = fakeClient(`cat > /dev/null; echo '${JSON.stringify(result)}'; exit 1`);
  ext.activate(fake.fakeContext());
  const text = "epoch 1\ntorch.OutOfMemoryError: CUDA out of memory.\n";
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", text, new vscode.Selection(0, 0, 1, 44));

  let out = await vscode.commands.executeCommand("rootcause.diagnoseSelection");
  assert.equal(out.ok, true, out.message);
  assert.equal(fake.state.panels.length, 1);
  assert.match(fake.state.panels[0].webview.html, /Activation Memory Spike/);
  assert.match(fake.state.panels[0].webview.html, /selection of a\.log \(lines 1–2\)/);

  out = await vscode.commands.executeCommand("rootcause.diagnoseFile");
  assert.equal(out.ok, true);
  assert.equal(fake.state.panels.length, 1, "the panel is reused");
  assert.match(fake.state.panels[0].webview.html, /<div class="sub">.*a\.log/);

  vscode.window.activeTextEditor = undefined;
  fake.state.files.set("/tmp/picked.out", text);
  fake.state.answers.push([vscode.Uri.file("/tmp/picked.out")]);
  out = await vscode.commands.executeCommand("rootcause.diagnoseFile");
  assert.equal(out.ok, true);
  const dialog = fake.state.messages.find((m) => m.level === "open");
  assert.deepEqual(dialog.options.filters["Training logs"], ["log", "txt", "out", "err"]);
  assert.deepEqual(dialog.options.filters["All files"], ["*"]);
  assert.match(fake.state.panels[0].webview.html, /picked\.out/);
});

test("an empty selection and no editor say what to do instead of running", async () => {
  ext.activate(fake.fakeContext());
  assert.equal(await vscode.commands.executeCommand("rootcause.diagnoseSelection"), undefined);
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "x\n");
  assert.equal(await vscode.commands.executeCommand("rootcause.diagnoseSelection"), undefined);
  assert.deepEqual(fake.state.messages.map((m) => m.level), ["info", "info"]);
  assert.match(fake.state.messages[1].text, /select the lines/);
});

test("the service token lives in SecretStorage, never in settings", async () => {
  const ctx = fake.fakeContext();
  ext.activate(ctx);
  fake.state.answers.push("rc_live_secret");
  await vscode.commands.executeCommand("rootcause.setToken");
  assert.equal(fake.state.secrets.get("rootcause.token"), "rc_live_secret");
  assert.equal(fake.state.messages.find((m) => m.level === "input").options.password, true);
  assert.ok(!JSON.stringify(fake.state.settings).includes("rc_live_secret"));
  await vscode.commands.executeCommand("rootcause.clearToken");
  assert.equal(fake.state.secrets.has("rootcause.token"), false);
});

test("the shipped bundle (dist/extension.js) activates and registers the same commands", () => {
  const bundled = require(path.join(root, "dist", "extension.js"));
  bundled.activate(fake.fakeContext());
  assert.deepEqual([...fake.state.commands.keys()].sort(), pkg.contributes.commands.map((c) => c.command).sort());
});

test("the panel's webview may run its script but load no local resources and no command URIs", async () => {
  fake.state.settings["rootcause.path"] = fakeClient(`cat > /dev/null; echo '${JSON.stringify(minimalResult())}'; exit 1`);
  ext.activate(fake.fakeContext());
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "boom\n");
  await vscode.commands.executeCommand("rootcause.diagnoseFile");
  const { options } = fake.state.panels[0];
  assert.equal(options.enableScripts, true);
  assert.deepEqual(options.localResourceRoots, []);
  assert.equal(options.enableCommandUris, false);
});
