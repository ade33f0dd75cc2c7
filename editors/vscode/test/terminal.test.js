// "Diagnose last terminal command": the shell-integration stream read as it runs, cleaned, kept per
// terminal; the message where shell integration is off.
"use strict";
const test = require("node:test");
const assert = require("node:assert/strict");
const { vscode, fake, load, fakeClient, minimalResult } = require("./helpers");

const { cleanTerminalOutput } = load("terminal.js");
const ext = load("extension.js");

test.beforeEach(() => fake.reset());

test("escape sequences and carriage-return redraws are removed", () => {
  const raw = "\x1b]633;C\x07\x1b[31mTraceback\x1b[0m (most recent call last):\r\n" + "progress 10%\rprogress 100%\r\nRuntimeError: x\x1b]633;D;1\x07";
  assert.equal(cleanTerminalOutput(raw), "Traceback (most recent call last):\nprogress 100%\nRuntimeError: x");
});

function execution(chunks, commandLine) {
  return {
    commandLine: { value: commandLine },
    async *read() {
      for (const c of chunks) {
        await new Promise((r) => setImmediate(r));
        yield c;
      }
    },
  };
}

test("no terminal; shell integration off: a clear message, the client is not run", async () => {
  ext.activate(fake.fakeContext());
  assert.equal(await vscode.commands.executeCommand("rootcause.diagnoseLastTerminalCommand"), undefined);
  assert.match(fake.state.messages[0].text, /no active terminal/);
  vscode.window.activeTerminal = { name: "bash", shellIntegration: undefined };
  fake.state.answers.push("Open setting");
  assert.equal(await vscode.commands.executeCommand("rootcause.diagnoseLastTerminalCommand"), undefined);
  assert.match(fake.state.messages[1].text, /shell integration is off in the terminal “bash”/);
  assert.match(fake.state.messages[1].text, /terminal\.integrated\.shellIntegration\.enabled/);
  assert.deepEqual(fake.state.executed.at(-1).args, ["terminal.integrated.shellIntegration.enabled"]);
  assert.equal(fake.state.panels.length, 0);
});

test("shell integration on but no finished command seen yet", async () => {
  ext.activate(fake.fakeContext());
  vscode.window.activeTerminal = { name: "zsh", shellIntegration: {} };
  await vscode.commands.executeCommand("rootcause.diagnoseLastTerminalCommand");
  assert.match(fake.state.messages[0].text, /no finished command seen in “zsh”/);
});

test("the last finished command's output goes to the client on stdin; evidence opens it in an editor", async () => {
  const seen = require("node:path").join(require("./helpers").tmp, "stdin.txt");
  fake.state.settings["rootcause.path"] = fakeClient(`cat > ${seen}; echo '${JSON.stringify(minimalResult())}'; exit 1`);
  const controller = ext.activate(fake.fakeContext());
  const terminal = { name: "bash", shellIntegration: {} };
  const other = { name: "other", shellIntegration: {} };
  vscode.window.activeTerminal = terminal;
  const first = execution(["old output\r\n"], "echo old");
  fake.emitters.start.fire({ terminal, execution: first });
  fake.emitters.end.fire({ terminal, execution: first, exitCode: 0 });
  const run = execution(["\x1b[1mepoch 1\x1b[0m\r\n", "torch.OutOfMemoryError: CUDA out of memory.\r\n"], "python train.py --batch-size 512");
  fake.emitters.start.fire({ terminal, execution: run });
  const noise = execution(["elsewhere\r\n"], "ls");
  fake.emitters.start.fire({ terminal: other, execution: noise });
  await new Promise((r) => setTimeout(r, 20));
  fake.emitters.end.fire({ terminal, execution: run, exitCode: 1 });
  fake.emitters.end.fire({ terminal: other, execution: noise, exitCode: 0 });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(controller.capture.lastCommand(terminal).commandLine, "python train.py --batch-size 512");

  const out = await vscode.commands.executeCommand("rootcause.diagnoseLastTerminalCommand");
  assert.equal(out.ok, true, out.message);
  assert.equal(require("node:fs").readFileSync(seen, "utf8"), "epoch 1\ntorch.OutOfMemoryError: CUDA out of memory.\n");
  const panel = fake.state.panels[0];
  assert.match(panel.webview.html, /last command in terminal “bash”: python train\.py --batch-size 512/);
  assert.ok(panel.webview.html.includes('data-action="reveal" data-line="2"'));
  panel.send({ type: "reveal", line: 2 });
  await new Promise((r) => setTimeout(r, 20));
  assert.equal(fake.state.shown[0].uri.scheme, "untitled");
  assert.equal(fake.state.textDocuments.at(-1).getText(), "epoch 1\ntorch.OutOfMemoryError: CUDA out of memory.\n");
  assert.equal(fake.state.shown[0].opts.selection.start.line, 1);
  // closing the terminal forgets it
  fake.emitters.closeTerminal.fire(terminal);
  assert.equal(controller.capture.lastCommand(terminal), undefined);
});
