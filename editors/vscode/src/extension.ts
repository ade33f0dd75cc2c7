// Wiring: the Diagnose commands (selection, file, terminal, bundle), the results panel, the
// Problems entries, the code lens, "Was this right?" and the service token. The client runs in
// client.ts; the panel's HTML is html.ts.
import { statSync } from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import { FeedbackOutcome, findClient, Found, INSTALL_FROM_CLONE, installLine, RunOutcome, runClient, sendFeedback } from "./client";
import { lineProblems, Severity } from "./diagnostics";
import { encyclopediaLink, newNonce, renderHtml } from "./html";
import { DiagnosisResult } from "./result";
import { TerminalCapture } from "./terminal";

export const COMMANDS = {
  selection: "rootcause.diagnoseSelection",
  file: "rootcause.diagnoseFile",
  terminal: "rootcause.diagnoseLastTerminalCommand",
  bundle: "rootcause.diagnoseBundle",
  feedback: "rootcause.feedback",
  setToken: "rootcause.setToken",
  clearToken: "rootcause.clearToken",
} as const;

const TOKEN_KEY = "rootcause.token";
const LOG_EXTENSIONS = ["log", "txt", "out", "err"];
/** A catalogue slug, as the service's feedback API takes it (or `none`). */
const SLUG = /^[a-z0-9][a-z0-9-]{0,99}$/;

/** What diagnose() gives the client: text on stdin, or a bundle's path. */
export type Input = { text: string } | { file: string };
/** What was diagnosed, and how to find its lines again. */
export interface Source {
  kind: "file" | "selection" | "terminal" | "bundle";
  label: string;
  /** The document (file, selection); absent for terminal output until it is opened. */
  uri?: vscode.Uri;
  /** 0-based line of the document where the diagnosed text starts. */
  lineOffset: number;
  /** The text itself, kept for terminal output (opened as an untitled document to jump into). */
  text?: string;
}

export interface Session {
  result: DiagnosisResult;
  source: Source;
  mode: "offline" | "server";
  server?: string;
  encyclopediaUrl: string | null;
  historyUrl: string | null;
  /** The diagnosis on the service, for "Was this right?" (its page link); null offline. */
  diagnosisLink: string | null;
  /** The verdict this editor sent on it, once the service recorded it. */
  feedback?: "right" | "wrong";
}

const SEVERITY: Record<Severity, vscode.DiagnosticSeverity> = {
  error: vscode.DiagnosticSeverity.Error,
  warning: vscode.DiagnosticSeverity.Warning,
  information: vscode.DiagnosticSeverity.Information,
};

export class Controller implements vscode.Disposable {
  readonly diagnostics = vscode.languages.createDiagnosticCollection("rootcause");
  readonly capture: TerminalCapture;
  panel: vscode.WebviewPanel | undefined;
  session: Session | undefined;
  private readonly disposables: vscode.Disposable[] = [];

  constructor(private readonly context: vscode.ExtensionContext) {
    this.capture = new TerminalCapture(() => this.maxBytes());
    this.disposables.push(
      this.diagnostics,
      this.capture,
      vscode.workspace.onDidChangeTextDocument((e) => {
        if (e.contentChanges.length > 0 && this.diagnostics.has(e.document.uri)) this.diagnostics.delete(e.document.uri);
      }),
      vscode.workspace.onDidCloseTextDocument((d) => this.diagnostics.delete(d.uri)),
    );
  }

  private config() {
    return vscode.workspace.getConfiguration("rootcause");
  }

  private maxBytes(): number {
    return Math.max(1, this.config().get<number>("maxInputMegabytes", 64)) * 1024 * 1024;
  }

  // ---- commands -------------------------------------------------------------------------------

  async diagnoseSelection(): Promise<RunOutcome | undefined> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) {
      void vscode.window.showInformationMessage("rootcause: open a log and select the lines to diagnose.");
      return undefined;
    }
    const sel = editor.selection;
    if (sel.isEmpty) {
      void vscode.window.showInformationMessage("rootcause: select the lines to diagnose first (or use “Diagnose this file”).");
      return undefined;
    }
    const doc = editor.document;
    const name = path.basename(doc.uri.path) || doc.uri.toString();
    const label = `selection of ${name} (lines ${sel.start.line + 1}–${sel.end.line + 1})`;
    return this.diagnose({ text: doc.getText(sel) }, { kind: "selection", label, uri: doc.uri, lineOffset: sel.start.line });
  }

  async diagnoseFile(uri?: vscode.Uri): Promise<RunOutcome | undefined> {
    let target = uri instanceof vscode.Uri ? uri : vscode.window.activeTextEditor?.document.uri;
    if (!target) {
      const picked = await vscode.window.showOpenDialog({
        canSelectMany: false,
        openLabel: "Diagnose",
        filters: { "Training logs": LOG_EXTENSIONS, "All files": ["*"] },
      });
      if (!picked || picked.length === 0) return undefined;
      target = picked[0];
    }
    const open = vscode.workspace.textDocuments.find((d) => d.uri.toString() === target!.toString());
    let text: string;
    try {
      text = open ? open.getText() : new TextDecoder("utf-8").decode(await vscode.workspace.fs.readFile(target));
    } catch (e) {
      void vscode.window.showErrorMessage(`rootcause: cannot read ${target.fsPath}: ${(e as Error).message}`);
      return undefined;
    }
    const label = path.basename(target.path) || target.toString();
    return this.diagnose({ text }, { kind: "file", label, uri: target, lineOffset: 0 });
  }

  async diagnoseLastTerminalCommand(): Promise<RunOutcome | undefined> {
    const terminal = vscode.window.activeTerminal;
    if (!terminal) {
      void vscode.window.showInformationMessage("rootcause: no active terminal. Open the terminal where the run failed.");
      return undefined;
    }
    if (!terminal.shellIntegration) {
      const choice = await vscode.window.showWarningMessage(
        `rootcause: shell integration is off in the terminal “${terminal.name}”, so the output of its commands cannot be read. ` +
          "Turn on terminal.integrated.shellIntegration.enabled (bash, zsh, fish, PowerShell), open a new terminal and run the command again — " +
          "or select the output in the terminal, paste it into an editor and use “Diagnose selection”.",
        "Open setting",
      );
      if (choice === "Open setting") {
        void vscode.commands.executeCommand("workbench.action.openSettings", "terminal.integrated.shellIntegration.enabled");
      }
      return undefined;
    }
    const last = this.capture.lastCommand(terminal);
    if (!last) {
      void vscode.window.showInformationMessage(
        `rootcause: no finished command seen in “${terminal.name}” since the extension started. Run the command again, then diagnose it.`,
      );
      return undefined;
    }
    const cmd = last.commandLine.length > 60 ? last.commandLine.slice(0, 57) + "…" : last.commandLine;
    const label = `last command in terminal “${terminal.name}”${cmd ? `: ${cmd}` : ""}`;
    return this.diagnose({ text: last.output }, { kind: "terminal", label, lineOffset: 0, text: last.output });
  }

  /** One job's per-rank files (logs, flight-recorder dumps, py-spy and faulthandler stacks), a
   *  folder or a .tar.gz/.tar/.zip, for a hang verdict: from the explorer's menu, or picked. */
  async diagnoseBundle(uri?: vscode.Uri): Promise<RunOutcome | undefined> {
    let target = uri instanceof vscode.Uri ? uri : undefined;
    if (!target) {
      const picked = await vscode.window.showOpenDialog({
        canSelectFolders: true,
        canSelectFiles: false,
        canSelectMany: false,
        openLabel: "Diagnose bundle",
        title: "The folder of one job's per-rank files (logs, flight-recorder dumps, stack dumps)",
      });
      if (!picked || picked.length === 0) return undefined;
      target = picked[0];
    }
    if (target.scheme !== "file") {
      void vscode.window.showErrorMessage(`rootcause: ${target.toString()} is not on this machine's disk; the client reads bundles from local folders and archives.`);
      return undefined;
    }
    let folder: boolean;
    try {
      folder = statSync(target.fsPath).isDirectory();
    } catch (e) {
      void vscode.window.showErrorMessage(`rootcause: cannot read ${target.fsPath}: ${(e as Error).message}`);
      return undefined;
    }
    const name = path.basename(target.fsPath) || target.fsPath;
    const label = folder ? `bundle ${name}/` : `bundle ${name}`;
    return this.diagnose({ file: target.fsPath }, { kind: "bundle", label, lineOffset: 0 });
  }

  /** "Was this right?" on the panel's diagnosis: right, or wrong with the right class and a note
   *  if the user knows them, sent through the client to the service that made the diagnosis. */
  async feedback(verdict?: "right" | "wrong"): Promise<FeedbackOutcome | undefined> {
    const session = this.session;
    if (!session) {
      void vscode.window.showInformationMessage("rootcause: no diagnosis yet. Diagnose a log or a bundle, then say whether it was right.");
      return undefined;
    }
    if (!session.diagnosisLink || !session.server) {
      void vscode.window.showInformationMessage(
        "rootcause: this diagnosis was made on this machine (offline) and is kept nowhere, so there is nothing to rate. " +
          "With rootcause.server set, diagnoses go to the service, and you can say there whether they were right.",
      );
      return undefined;
    }
    if (verdict === undefined) {
      const title = session.result.failure?.title ?? "no known failure";
      const choice = await vscode.window.showInformationMessage(`rootcause: was this diagnosis (${title}) right?`, "Right", "Wrong…");
      if (choice !== "Right" && choice !== "Wrong…") return undefined;
      verdict = choice === "Right" ? "right" : "wrong";
    }
    let correctClass = "";
    let note = "";
    if (verdict === "wrong") {
      const named = await vscode.window.showInputBox({
        title: "rootcause: the diagnosis was wrong",
        prompt: "The right class's slug, as in the encyclopedia's links (e.g. activation-oom), or none if the run did not fail. Empty if you do not know.",
        placeHolder: "activation-oom",
        ignoreFocusOut: true,
        validateInput: (v: string) => (v.trim() === "" || SLUG.test(v.trim()) ? undefined : "A class slug: lower-case letters, digits and dashes."),
      });
      if (named === undefined) return undefined;
      correctClass = named.trim();
      const said = await vscode.window.showInputBox({
        title: "rootcause: a note for the people who review it (optional)",
        prompt: "What was the real cause? Masked like the log before it is stored.",
        ignoreFocusOut: true,
      });
      if (said === undefined) return undefined;
      note = said.trim();
    }
    const found = this.client();
    if (found.path === null) {
      await this.notifyInstall(this.notFound(found));
      return { ok: false, kind: "missing", message: "client not found" };
    }
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const outcome = await sendFeedback({
      client: found.path,
      diagnosis: session.diagnosisLink,
      server: session.server,
      token: await this.context.secrets.get(TOKEN_KEY),
      right: verdict === "right",
      correctClass,
      note,
      timeoutMs: Math.max(5, this.config().get<number>("timeoutSeconds", 120)) * 1000,
      cwd: folders[0],
    });
    if (!outcome.ok) {
      if (outcome.kind === "too-old" || outcome.kind === "missing") await this.notifyInstall(outcome.message);
      else void vscode.window.showErrorMessage(outcome.message);
      return outcome;
    }
    void vscode.window.showInformationMessage(`rootcause: ${outcome.message}`);
    if (this.session === session) {
      session.feedback = verdict;
      if (this.panel) this.showPanel(session);
    }
    return outcome;
  }

  async setToken(): Promise<void> {
    const token = await vscode.window.showInputBox({
      title: "rootcause service token",
      prompt: "An API token of your rootcause service (scope diagnoses:write). Kept in VS Code's SecretStorage, never in settings.",
      password: true,
      ignoreFocusOut: true,
    });
    if (!token) return;
    await this.context.secrets.store(TOKEN_KEY, token.trim());
    const server = this.config().get<string>("server", "").trim();
    void vscode.window.showInformationMessage(
      server
        ? `rootcause: token saved; diagnoses go to ${server}.`
        : "rootcause: token saved. It is used only once rootcause.server is set; until then everything stays on this machine.",
    );
  }

  async clearToken(): Promise<void> {
    await this.context.secrets.delete(TOKEN_KEY);
    void vscode.window.showInformationMessage("rootcause: token forgotten.");
  }

  // ---- running the client ---------------------------------------------------------------------

  private client(): Found {
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    return findClient({ configured: this.config().get<string>("path", ""), workspaceFolders: folders, env: process.env });
  }

  private notFound(found: Found & { path: null }): string {
    const where = found.configured ? "at the path in rootcause.path" : "on the PATH or in the workspace's virtual environment";
    return `The rootcause client was not found ${where}.`;
  }

  async diagnose(input: Input, source: Source): Promise<RunOutcome> {
    const config = this.config();
    const folders = (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath);
    const found = this.client();
    if (found.path === null) {
      await this.notifyInstall(this.notFound(found));
      return { ok: false, kind: "missing", message: "client not found" };
    }
    const server = config.get<string>("server", "").trim().replace(/\/+$/, "");
    const token = server ? await this.context.secrets.get(TOKEN_KEY) : undefined;
    const outcome = await vscode.window.withProgress(
      {
        location: vscode.ProgressLocation.Notification,
        title:
          "file" in input
            ? server
              ? `rootcause: sending the bundle to ${server}…`
              : "rootcause: reading the bundle on this machine…"
            : server
              ? `rootcause: sending the log to ${server}…`
              : "rootcause: diagnosing on this machine…",
        cancellable: true,
      },
      (_progress, cancel) => {
        const abort = new AbortController();
        cancel.onCancellationRequested(() => abort.abort());
        return runClient({
          client: found.path,
          ...input,
          server: server || undefined,
          token,
          timeoutMs: Math.max(5, config.get<number>("timeoutSeconds", 120)) * 1000,
          maxBytes: this.maxBytes(),
          cwd: folders[0],
          signal: abort.signal,
        });
      },
    );
    if (!outcome.ok) {
      if (outcome.kind === "missing" || outcome.kind === "too-old") await this.notifyInstall(outcome.message);
      else if (outcome.kind !== "cancelled") void vscode.window.showErrorMessage(outcome.message);
      return outcome;
    }
    const result = outcome.result;
    const base = server || config.get<string>("encyclopediaUrl", "https://rootcause.example.com").trim();
    const page = server && result.id ? (result.link ?? `${server}/diagnoses/${encodeURIComponent(result.id)}/`) : null;
    this.session = {
      result,
      source,
      mode: outcome.mode,
      server: server || undefined,
      encyclopediaUrl: encyclopediaLink(result.encyclopedia_url, base),
      historyUrl: page,
      diagnosisLink: page,
    };
    this.showDiagnostics(this.session);
    this.showPanel(this.session);
    return outcome;
  }

  /** The client is missing or too old: how to install it. With a service configured, the line
   *  its /downloads/ page gives (the wheel it serves); else from a clone or a service's page. */
  private async notifyInstall(reason: string): Promise<void> {
    const server = this.config().get<string>("server", "").trim().replace(/\/+$/, "");
    const line = server ? await installLine(server) : null;
    const how = line
      ? `Install the light client from ${server} with “${line}”`
      : server
        ? `Install the light client from ${server}/downloads/ (the pip install line there), or with “${INSTALL_FROM_CLONE}” in a clone of rootcause`
        : `Install the light client with the pip install line of your rootcause service's /downloads/ page, or with “${INSTALL_FROM_CLONE}” in a clone of rootcause`;
    const items = line ? ["Open setting", "Copy install command"] : ["Open setting"];
    const choice = await vscode.window.showWarningMessage(`${reason} ${how}, or point the rootcause.path setting at an existing one.`, ...items);
    if (choice === "Open setting") void vscode.commands.executeCommand("workbench.action.openSettings", "rootcause.path");
    if (choice === "Copy install command" && line) await vscode.env.clipboard.writeText(line);
  }

  // ---- Problems -------------------------------------------------------------------------------

  showDiagnostics(session: Session): void {
    const uri = session.source.uri;
    if (!uri) return;
    const problems = lineProblems(session.result, session.source.lineOffset).map((p) => {
      const d = new vscode.Diagnostic(new vscode.Range(p.line, 0, p.line, Number.MAX_SAFE_INTEGER), p.message, SEVERITY[p.severity]);
      d.source = "rootcause";
      if (session.result.failure) d.code = session.result.failure.slug;
      return d;
    });
    this.diagnostics.set(uri, problems);
  }

  // ---- the panel ------------------------------------------------------------------------------

  showPanel(session: Session): void {
    if (!this.panel) {
      this.panel = vscode.window.createWebviewPanel(
        "rootcause.result",
        "rootcause",
        { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
        { enableScripts: true, localResourceRoots: [], enableCommandUris: false },
      );
      this.panel.onDidDispose(() => (this.panel = undefined), null, this.disposables);
      this.panel.webview.onDidReceiveMessage((m) => void this.onMessage(m), null, this.disposables);
    }
    const f = session.result.failure;
    this.panel.title = `rootcause: ${f ? f.title : "no known failure"}`;
    this.panel.webview.html = renderHtml(session.result, {
      cspSource: this.panel.webview.cspSource,
      nonce: newNonce(),
      sourceLabel: session.source.label,
      canJump: Boolean(session.source.uri || session.source.text),
      mode: session.mode,
      server: session.server,
      encyclopediaUrl: session.encyclopediaUrl,
      historyUrl: session.historyUrl,
      feedback: session.diagnosisLink ? { given: session.feedback } : null,
    });
    this.panel.reveal(vscode.ViewColumn.Beside, true);
  }

  /** Messages from the webview name an action; the values acted on come from the session, never the page. */
  async onMessage(message: { type?: unknown; line?: unknown; which?: unknown }): Promise<unknown> {
    const session = this.session;
    if (!session || typeof message !== "object" || message === null) return;
    const rem = session.result.remediation;
    const command = message.which === "verification" ? rem?.verification_command : message.which === "command" ? rem?.command : undefined;
    const what = message.which === "verification" ? "verification command" : "fix command";
    switch (message.type) {
      case "reveal":
        if (typeof message.line === "number" && Number.isInteger(message.line) && message.line >= 1) await this.reveal(session, message.line);
        return;
      case "copy":
        if (command) {
          await vscode.env.clipboard.writeText(command);
          void vscode.window.showInformationMessage(`rootcause: ${what} copied.`);
        }
        return;
      case "run":
        if (command) await this.runInTerminal(what, command);
        return;
      case "openEncyclopedia":
        if (session.encyclopediaUrl) await vscode.env.openExternal(vscode.Uri.parse(session.encyclopediaUrl));
        return;
      case "openHistory":
        if (session.historyUrl) await vscode.env.openExternal(vscode.Uri.parse(session.historyUrl));
        return;
      case "feedback":
        if (message.which === "right" || message.which === "wrong") return this.feedback(message.which);
        return;
      default:
        return;
    }
  }

  private async reveal(session: Session, line1: number): Promise<void> {
    const source = session.source;
    if (!source.uri && source.text !== undefined) {
      const doc = await vscode.workspace.openTextDocument({ content: source.text, language: "log" });
      source.uri = doc.uri;
    }
    if (!source.uri) return;
    const line = line1 - 1 + source.lineOffset;
    const range = new vscode.Range(line, 0, line, 0);
    await vscode.window.showTextDocument(source.uri, { selection: range, viewColumn: vscode.ViewColumn.One, preview: false });
  }

  private async runInTerminal(what: string, command: string): Promise<void> {
    const choice = await vscode.window.showWarningMessage(
      `Run the ${what} in a new terminal?`,
      { modal: true, detail: command },
      "Run",
    );
    if (choice !== "Run") return;
    const terminal = vscode.window.createTerminal({ name: `rootcause: ${what}` });
    terminal.show();
    terminal.sendText(command, true);
  }

  dispose(): void {
    this.panel?.dispose();
    for (const d of this.disposables) d.dispose();
  }
}

export class LogCodeLens implements vscode.CodeLensProvider {
  provideCodeLenses(document: vscode.TextDocument): vscode.CodeLens[] {
    if (!vscode.workspace.getConfiguration("rootcause").get<boolean>("codeLens", true)) return [];
    return [
      new vscode.CodeLens(new vscode.Range(0, 0, 0, 0), {
        title: "$(search) Diagnose this file with rootcause",
        tooltip: "Run rootcause on this log (offline unless rootcause.server is set)",
        command: COMMANDS.file,
        arguments: [document.uri],
      }),
    ];
  }
}

export const CODE_LENS_SELECTOR: vscode.DocumentSelector = [
  { scheme: "file", pattern: "**/*.{log,out,err}" },
  { language: "log" },
];

export function activate(context: vscode.ExtensionContext): Controller {
  const controller = new Controller(context);
  context.subscriptions.push(
    controller,
    vscode.commands.registerCommand(COMMANDS.selection, () => controller.diagnoseSelection()),
    vscode.commands.registerCommand(COMMANDS.file, (uri?: vscode.Uri) => controller.diagnoseFile(uri)),
    vscode.commands.registerCommand(COMMANDS.terminal, () => controller.diagnoseLastTerminalCommand()),
    vscode.commands.registerCommand(COMMANDS.bundle, (uri?: vscode.Uri) => controller.diagnoseBundle(uri)),
    vscode.commands.registerCommand(COMMANDS.feedback, () => controller.feedback()),
    vscode.commands.registerCommand(COMMANDS.setToken, () => controller.setToken()),
    vscode.commands.registerCommand(COMMANDS.clearToken, () => controller.clearToken()),
    vscode.languages.registerCodeLensProvider(CODE_LENS_SELECTOR, new LogCodeLens()),
  );
  return controller;
}

export function deactivate(): void {
  // everything is in context.subscriptions
}
