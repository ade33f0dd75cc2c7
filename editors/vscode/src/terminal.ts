// The output of the last finished command of each terminal, through the shell-integration API.
// A command's output can only be read from when it starts, so every execution is read as it runs
// (its tail kept, up to a limit) and remembered per terminal when it ends.
import * as vscode from "vscode";

export interface FinishedCommand {
  commandLine: string;
  output: string;
  exitCode: number | undefined;
}

/** Terminal bytes to text: no escape sequences, carriage-return redraws resolved. */
export function cleanTerminalOutput(raw: string): string {
  const noEscapes = raw
    .replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, "") // OSC (shell-integration marks, titles)
    .replace(/\x1b\[[0-?]*[ -/]*[@-~]/g, "") // CSI (colours, cursor)
    .replace(/\x1b[@-Z\\-_]/g, "");
  return noEscapes
    .replace(/\r\n/g, "\n")
    .split("\n")
    .map((line) => {
      const parts = line.split("\r").filter((p) => p !== "");
      return parts.length ? parts[parts.length - 1] : "";
    })
    .join("\n");
}

export class TerminalCapture implements vscode.Disposable {
  private readonly last = new Map<vscode.Terminal, FinishedCommand>();
  private readonly reading = new Map<vscode.TerminalShellExecution, { text: string; done: Promise<void> }>();
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly maxChars: () => number) {
    this.disposables.push(
      vscode.window.onDidStartTerminalShellExecution((e) => this.start(e.execution)),
      vscode.window.onDidEndTerminalShellExecution((e) => void this.finish(e)),
      vscode.window.onDidCloseTerminal((t) => this.last.delete(t)),
    );
  }

  private start(execution: vscode.TerminalShellExecution): void {
    const state = { text: "", done: Promise.resolve() };
    state.done = (async () => {
      try {
        for await (const chunk of execution.read()) {
          state.text += chunk;
          const max = this.maxChars();
          if (state.text.length > max * 2) state.text = state.text.slice(-max);
        }
      } catch {
        // a stream that breaks keeps what was read
      }
    })();
    this.reading.set(execution, state);
  }

  private async finish(e: vscode.TerminalShellExecutionEndEvent): Promise<void> {
    const pending = this.reading.get(e.execution);
    this.reading.delete(e.execution);
    // The stream ends with the execution; do not wait forever for a stream that does not.
    if (pending) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([pending.done, new Promise((r) => (timer = setTimeout(r, 3000)))]);
      clearTimeout(timer);
    }
    const raw = pending?.text ?? "";
    const output = cleanTerminalOutput(raw).slice(-this.maxChars());
    this.last.set(e.terminal, { commandLine: e.execution.commandLine?.value ?? "", output, exitCode: e.exitCode });
  }

  lastCommand(terminal: vscode.Terminal): FinishedCommand | undefined {
    return this.last.get(terminal);
  }

  dispose(): void {
    for (const d of this.disposables) d.dispose();
  }
}
