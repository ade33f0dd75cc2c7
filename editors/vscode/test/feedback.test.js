// "Was this right?": from the panel's buttons and the palette, through `rootcause feedback` (fake
// clients here: the command line, the token, the exit codes; test-live/service.js sends it to a
// live service with the real client).
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const fs = require("node:fs");
const path = require("node:path");
const { vscode, fake, load, fakeClient, minimalResult, tmp } = require("./helpers");

const ext = load("extension.js");
const { feedbackArgs } = load("client.js");
const { renderHtml } = load("html.js");

const ID = "0f0e0d0c-0000-4000-8000-0000000000aa";
const SERVER = "https://rc.example.org";
const LINK = `${SERVER}/diagnoses/${ID}/?key=visitor-key`;
let n = 0;

test.beforeEach(() => fake.reset());

/** A fake client: `diagnose` prints a service's result; `feedback` records its argv and token
 *  and answers with `feedback` (shell) — by default what the real one prints on success. */
function client(feedback = `echo "recorded: $3 on diagnosis ${ID}; thank you"`) {
  const log = path.join(tmp, `feedback-${++n}.txt`);
  const result = JSON.stringify(minimalResult({ id: ID, link: LINK }));
  const file = fakeClient(
    `if [ "$1" = feedback ]; then echo "$@" >> ${log}; echo "token=$ROOTCAUSE_TOKEN" >> ${log}; ${feedback}; exit $?; fi\n` +
      `cat > /dev/null; echo '${result}'; exit 1`,
  );
  return { file, log, calls: () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "") };
}

/** Diagnose a file through the service (rootcause.server set, a token stored). */
async function diagnosedOnService(c) {
  fake.state.settings["rootcause.path"] = c.file;
  fake.state.settings["rootcause.server"] = `${SERVER}/`;
  fake.state.secrets.set("rootcause.token", "rc_live_secret");
  const controller = ext.activate(fake.fakeContext());
  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "torch.OutOfMemoryError: CUDA out of memory.\n");
  const out = await vscode.commands.executeCommand("rootcause.diagnoseFile");
  assert.equal(out.ok, true, out.message);
  return controller;
}

test("the command line: the diagnosis's link, the verdict, the class and note only with a wrong one", () => {
  assert.deepEqual(feedbackArgs({ diagnosis: LINK, server: SERVER, right: true, correctClass: "x", note: "fine" }), [
    "feedback", LINK, "--right", "--server", SERVER, "--note", "fine",
  ]);
  assert.deepEqual(feedbackArgs({ diagnosis: ID, server: SERVER, right: false, correctClass: "activation-oom", note: "" }), [
    "feedback", ID, "--wrong", "--server", SERVER, "--class", "activation-oom",
  ]);
});

test("the panel's Right button sends the verdict on the diagnosis's link, with the token in the environment", async () => {
  const c = client();
  await diagnosedOnService(c);
  const panel = fake.state.panels[0];
  assert.match(panel.webview.html, /<h2>Was this right\?<\/h2>/);
  assert.match(panel.webview.html, /data-action="feedback" data-which="right">Right</);
  assert.match(panel.webview.html, /data-action="feedback" data-which="wrong">Wrong…</);
  // the link of the result, the visitor's key with it (the client reads it from the link)
  assert.ok(panel.webview.html.includes(`href="${LINK.replace("&", "&amp;")}"`));

  panel.send({ type: "feedback", which: "right" });
  await waitFor(() => fake.state.messages.some((m) => m.level === "info"));
  assert.equal(c.calls(), `feedback ${LINK} --right --server ${SERVER}\ntoken=rc_live_secret\n`);
  assert.match(fake.state.messages.find((m) => m.level === "info").text, /recorded: --right on diagnosis/);
  await waitFor(() => /Sent: this diagnosis was <strong>right<\/strong>/.test(panel.webview.html));
});

test("Wrong from the palette: the right class and a note asked for, then sent", async () => {
  const c = client();
  await diagnosedOnService(c);
  fake.state.answers.push("Wrong…", "activation-oom", "the batch grew at epoch 3");
  const out = await vscode.commands.executeCommand("rootcause.feedback");
  assert.equal(out.ok, true, out.message);
  assert.equal(
    c.calls(),
    `feedback ${LINK} --wrong --server ${SERVER} --class activation-oom --note the batch grew at epoch 3\ntoken=rc_live_secret\n`,
  );
  const inputs = fake.state.messages.filter((m) => m.level === "input");
  assert.equal(inputs.length, 2);
  const validate = inputs[0].options.validateInput;
  assert.equal(validate(""), undefined, "the class may be left out");
  assert.equal(validate("none"), undefined);
  assert.equal(validate("activation-oom"), undefined);
  assert.match(validate("Activation OOM"), /class slug/);
  assert.match(validate("x; rm -rf /"), /class slug/);
  assert.match(fake.state.panels[0].webview.html, /Sent: this diagnosis was <strong>wrong<\/strong>/);
});

test("a question dismissed sends nothing", async () => {
  const c = client();
  await diagnosedOnService(c);
  fake.state.answers.push(undefined); // the Right / Wrong… question
  assert.equal(await vscode.commands.executeCommand("rootcause.feedback"), undefined);
  fake.state.answers.push("Wrong…", undefined); // the class: Escape
  assert.equal(await vscode.commands.executeCommand("rootcause.feedback"), undefined);
  fake.state.answers.push("Wrong…", "", undefined); // no class named, the note: Escape
  assert.equal(await vscode.commands.executeCommand("rootcause.feedback"), undefined);
  assert.equal(fake.state.messages.filter((m) => m.level === "input").length, 3);
  assert.equal(c.calls(), "");
});

test("the service refusing, rate-limiting or out: the client's own words, as an error", async () => {
  const cases = [
    [2, "error: the service refused the answer (400): no class of the catalogue is called nope", "refused", /no class of the catalogue/],
    [3, "error: too many requests: try again in 60 s", "rate-limited", /too many requests/],
    [4, "error: cannot reach https://rc.example.org (connection refused)", "outage", /cannot reach/],
    [2, "Usage: rootcause [OPTIONS] COMMAND\nError: No such command 'feedback'.", "too-old", /too old to send feedback/],
  ];
  for (const [code, said, kind, shown] of cases) {
    fake.reset();
    const c = client(`echo "${said}" >&2; exit ${code}`);
    await diagnosedOnService(c);
    fake.state.answers.push("Right");
    const out = await vscode.commands.executeCommand("rootcause.feedback");
    assert.equal(out.ok, false);
    assert.equal(out.kind, kind);
    const last = fake.state.messages.at(-1);
    assert.equal(last.level, kind === "too-old" ? "warning" : "error");
    assert.match(last.text, shown);
    assert.ok(!/Sent: this diagnosis/.test(fake.state.panels[0].webview.html));
  }
});

test("an offline diagnosis is kept nowhere: the panel and the command say so, and nothing runs", async () => {
  const c = client();
  fake.state.settings["rootcause.path"] = c.file;
  ext.activate(fake.fakeContext());
  assert.equal(await vscode.commands.executeCommand("rootcause.feedback"), undefined);
  assert.match(fake.state.messages.at(-1).text, /no diagnosis yet/);

  vscode.window.activeTextEditor = fake.fakeEditor("/tmp/a.log", "boom\n");
  await vscode.commands.executeCommand("rootcause.diagnoseFile");
  const html = fake.state.panels[0].webview.html;
  assert.match(html, /Diagnosed offline, this result is kept nowhere/);
  assert.ok(!html.includes('data-action="feedback"'));
  fake.state.panels[0].send({ type: "feedback", which: "right" });
  assert.equal(await vscode.commands.executeCommand("rootcause.feedback"), undefined);
  assert.match(fake.state.messages.at(-1).text, /made on this machine \(offline\)/);
  assert.equal(c.calls(), "");
});

test("a verdict on the page is one of two words: anything else is ignored", async () => {
  const c = client();
  await diagnosedOnService(c);
  const panel = fake.state.panels[0];
  for (const which of ["--class=x", "maybe", 1, undefined]) panel.send({ type: "feedback", which });
  await new Promise((r) => setTimeout(r, 100));
  assert.equal(c.calls(), "");
  // the sent verdict is escaped like every value
  const html = renderHtml(minimalResult(), { cspSource: "x", nonce: "n", sourceLabel: "a", canJump: false, mode: "server", server: SERVER, encyclopediaUrl: null, feedback: { given: "<b>" } });
  assert.ok(html.includes("<strong>&lt;b&gt;</strong>"));
});

async function waitFor(check, ms = 10_000) {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error("timed out waiting");
    await new Promise((r) => setTimeout(r, 20));
  }
}
