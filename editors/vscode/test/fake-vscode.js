// A fake of the part of the `vscode` API the extension uses. It records what the extension asks
// for (messages, panels, diagnostics, terminals) and lets a test answer dialogs and fire events.
"use strict";
const nodePath = require("node:path");

class Disposable {
  constructor(fn) { this.fn = fn; }
  dispose() { if (this.fn) this.fn(); this.fn = undefined; }
  static from(...items) { return new Disposable(() => items.forEach((i) => i.dispose())); }
}

class EventEmitter {
  constructor() {
    this.listeners = new Set();
    this.event = (listener, thisArg, disposables) => {
      const l = thisArg ? listener.bind(thisArg) : listener;
      this.listeners.add(l);
      const d = new Disposable(() => this.listeners.delete(l));
      if (Array.isArray(disposables)) disposables.push(d);
      return d;
    };
  }
  fire(value) { for (const l of [...this.listeners]) l(value); }
  dispose() { this.listeners.clear(); }
}

class Uri {
  constructor(scheme, p) { this.scheme = scheme; this.path = p; }
  static file(p) { return new Uri("file", nodePath.resolve(p)); }
  static parse(s) {
    const m = /^([a-z][a-z0-9+.-]*):(.*)$/i.exec(s);
    return m ? new Uri(m[1], m[2]) : new Uri("file", s);
  }
  get fsPath() { return this.path; }
  toString() { return this.scheme === "file" ? `file://${this.path}` : `${this.scheme}:${this.path}`; }
}

class Position {
  constructor(line, character) { this.line = line; this.character = character; }
}
class Range {
  constructor(a, b, c, d) {
    if (a instanceof Position) { this.start = a; this.end = b; }
    else { this.start = new Position(a, b); this.end = new Position(c, d); }
  }
  get isEmpty() { return this.start.line === this.end.line && this.start.character === this.end.character; }
}
class Selection extends Range {}

const DiagnosticSeverity = { Error: 0, Warning: 1, Information: 2, Hint: 3 };
class Diagnostic {
  constructor(range, message, severity) { this.range = range; this.message = message; this.severity = severity; }
}
class CodeLens {
  constructor(range, command) { this.range = range; this.command = command; }
}

class DiagnosticCollection {
  constructor(name) { this.name = name; this.map = new Map(); }
  set(uri, diags) { this.map.set(uri.toString(), diags); }
  get(uri) { return this.map.get(uri.toString()); }
  has(uri) { return this.map.has(uri.toString()); }
  delete(uri) { this.map.delete(uri.toString()); }
  clear() { this.map.clear(); }
  dispose() { this.map.clear(); }
}

/** A text document over a string. */
class TextDocument {
  constructor(uri, text, languageId = "log") { this.uri = uri; this.text = text; this.languageId = languageId; }
  getText(range) {
    if (!range) return this.text;
    const lines = this.text.split("\n");
    if (range.start.line === range.end.line) return lines[range.start.line].slice(range.start.character, range.end.character);
    const out = [lines[range.start.line].slice(range.start.character)];
    for (let i = range.start.line + 1; i < range.end.line; i++) out.push(lines[i]);
    out.push(lines[range.end.line].slice(0, range.end.character));
    return out.join("\n");
  }
  get lineCount() { return this.text.split("\n").length; }
}

const state = {};
const emitters = {};

function reset() {
  Object.assign(state, {
    commands: new Map(),
    executed: [],
    messages: [], // {level, text, items}
    answers: [], // queue of answers for show*Message / showInputBox / showOpenDialog
    settings: {},
    secrets: new Map(),
    panels: [],
    shown: [], // showTextDocument calls
    terminals: [],
    clipboard: "",
    opened: [], // openExternal
    codeLenses: [],
    collections: [],
    workspaceFolders: undefined,
    textDocuments: [],
    files: new Map(), // fsPath -> text for workspace.fs.readFile
    untitled: 0,
  });
  for (const k of ["start", "end", "closeTerminal", "change", "close"]) emitters[k] = new EventEmitter();
  window.activeTextEditor = undefined;
  window.activeTerminal = undefined;
}

function answer() { return state.answers.length ? state.answers.shift() : undefined; }
function message(level) {
  return async (text, ...items) => {
    const opts = items.length && typeof items[0] === "object" ? items.shift() : undefined;
    state.messages.push({ level, text, items, options: opts });
    return answer();
  };
}

const window = {
  activeTextEditor: undefined,
  activeTerminal: undefined,
  showInformationMessage: message("info"),
  showWarningMessage: message("warning"),
  showErrorMessage: message("error"),
  showInputBox: async (opts) => { state.messages.push({ level: "input", text: opts.prompt, options: opts }); return answer(); },
  showOpenDialog: async (opts) => { state.messages.push({ level: "open", options: opts }); return answer(); },
  withProgress: async (opts, task) => {
    const cancel = new EventEmitter();
    state.progress = { opts, cancel };
    return task({ report() {} }, { isCancellationRequested: false, onCancellationRequested: cancel.event });
  },
  createWebviewPanel: (viewType, title, showOptions, options) => {
    const received = new EventEmitter();
    const disposed = new EventEmitter();
    const panel = {
      viewType, title, showOptions, options,
      webview: { html: "", cspSource: "vscode-webview://fake", onDidReceiveMessage: received.event, postMessage: async () => true },
      reveal() { panel.revealed = (panel.revealed || 0) + 1; },
      onDidDispose: disposed.event,
      dispose() { disposed.fire(); },
      /** test helper: a message from the page */
      send(msg) { received.fire(msg); },
    };
    state.panels.push(panel);
    return panel;
  },
  showTextDocument: async (uri, opts) => { state.shown.push({ uri, opts }); return {}; },
  createTerminal: (opts) => {
    const t = { name: opts.name, sent: [], shown: false, sendText(text, addNewLine) { t.sent.push({ text, addNewLine }); }, show() { t.shown = true; } };
    state.terminals.push(t);
    return t;
  },
  onDidStartTerminalShellExecution: (l, t, d) => emitters.start.event(l, t, d),
  onDidEndTerminalShellExecution: (l, t, d) => emitters.end.event(l, t, d),
  onDidCloseTerminal: (l, t, d) => emitters.closeTerminal.event(l, t, d),
};

const workspace = {
  getConfiguration: (section) => ({
    get: (key, dflt) => {
      const v = state.settings[`${section}.${key}`];
      return v === undefined ? dflt : v;
    },
  }),
  get workspaceFolders() { return state.workspaceFolders; },
  get textDocuments() { return state.textDocuments; },
  fs: {
    readFile: async (uri) => {
      if (state.files.has(uri.fsPath)) return new TextEncoder().encode(state.files.get(uri.fsPath));
      return require("node:fs").readFileSync(uri.fsPath);
    },
  },
  openTextDocument: async (arg) => {
    if (arg && typeof arg === "object" && "content" in arg) {
      const doc = new TextDocument(new Uri("untitled", `Untitled-${++state.untitled}`), arg.content, arg.language);
      state.textDocuments.push(doc);
      return doc;
    }
    throw new Error("fake openTextDocument: only {content} is supported");
  },
  onDidChangeTextDocument: (l, t, d) => emitters.change.event(l, t, d),
  onDidCloseTextDocument: (l, t, d) => emitters.close.event(l, t, d),
};

const languages = {
  createDiagnosticCollection: (name) => { const c = new DiagnosticCollection(name); state.collections.push(c); return c; },
  registerCodeLensProvider: (selector, provider) => { state.codeLenses.push({ selector, provider }); return new Disposable(); },
};

const commands = {
  registerCommand: (id, fn) => {
    if (state.commands.has(id)) throw new Error(`command ${id} registered twice`);
    state.commands.set(id, fn);
    return new Disposable(() => state.commands.delete(id));
  },
  executeCommand: async (id, ...args) => {
    state.executed.push({ id, args });
    const fn = state.commands.get(id);
    return fn ? fn(...args) : undefined;
  },
};

const env = {
  clipboard: { writeText: async (t) => { state.clipboard = t; }, readText: async () => state.clipboard },
  openExternal: async (uri) => { state.opened.push(uri.toString()); return true; },
};

function fakeContext() {
  return {
    subscriptions: [],
    secrets: {
      get: async (k) => state.secrets.get(k),
      store: async (k, v) => { state.secrets.set(k, v); },
      delete: async (k) => { state.secrets.delete(k); },
    },
  };
}

/** An editor over `text` with a selection from line a to line b (0-based, whole lines). */
function fakeEditor(fsPath, text, selection) {
  const doc = new TextDocument(Uri.file(fsPath), text);
  state.textDocuments.push(doc);
  const sel = selection || new Selection(0, 0, 0, 0);
  return { document: doc, selection: sel };
}

reset();

module.exports = {
  Disposable, EventEmitter, Uri, Position, Range, Selection, Diagnostic, DiagnosticSeverity, CodeLens,
  ViewColumn: { Active: -1, Beside: -2, One: 1, Two: 2 },
  ProgressLocation: { SourceControl: 1, Window: 10, Notification: 15 },
  window, workspace, languages, commands, env,
  // test helpers
  _test: { state, emitters, reset, fakeContext, fakeEditor, TextDocument },
};
