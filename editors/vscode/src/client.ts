// Finding and running the local client, `rootcause diagnose - --offline --json`, with the log on
// standard input. No `vscode` import here: the tests run this module against the real client.
import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import * as path from "node:path";
import { DiagnosisResult, resultProblem } from "./result";

/** The light client, as the notification and the docs tell it. */
export const INSTALL_COMMAND = "pip install git+https://git.example.com/rootcause.git";

export interface FindOptions {
  /** The `rootcause.path` setting; `${workspaceFolder}` is replaced by the first folder. */
  configured: string;
  workspaceFolders: string[];
  env: NodeJS.ProcessEnv;
  platform?: NodeJS.Platform;
}

export type Found =
  | { path: string; how: "setting" | "virtualenv" | "PATH" }
  | { path: null; tried: string[]; configured: boolean };

function isExecutable(file: string, platform: NodeJS.Platform): boolean {
  try {
    if (!statSync(file).isFile()) return false;
    if (platform !== "win32") accessSync(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

function onPath(name: string, env: NodeJS.ProcessEnv, platform: NodeJS.Platform): string[] {
  const dirs = (env.PATH ?? env.Path ?? "").split(platform === "win32" ? ";" : ":").filter(Boolean);
  const exts = platform === "win32" ? (env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";") : [""];
  const out: string[] = [];
  for (const dir of dirs) for (const ext of exts) out.push(path.join(dir, name + ext.toLowerCase()));
  return out;
}

/** The setting when set, else the workspace's virtual environment, else the PATH. */
export function findClient(opts: FindOptions): Found {
  const platform = opts.platform ?? process.platform;
  const folder = opts.workspaceFolders[0] ?? "";
  const configured = opts.configured.trim().replace(/\$\{workspaceFolder\}/g, folder);
  if (configured) {
    const candidates =
      configured.includes("/") || configured.includes("\\")
        ? [path.resolve(folder || ".", configured)]
        : onPath(configured, opts.env, platform);
    const hit = candidates.find((c) => isExecutable(c, platform));
    return hit ? { path: hit, how: "setting" } : { path: null, tried: candidates, configured: true };
  }
  const venvBins =
    platform === "win32"
      ? [".venv\\Scripts\\rootcause.exe", "venv\\Scripts\\rootcause.exe"]
      : [".venv/bin/rootcause", "venv/bin/rootcause", "env/bin/rootcause"];
  const tried: string[] = [];
  for (const ws of opts.workspaceFolders) {
    for (const rel of venvBins) {
      const candidate = path.join(ws, rel);
      tried.push(candidate);
      if (isExecutable(candidate, platform)) return { path: candidate, how: "virtualenv" };
    }
  }
  if (opts.env.VIRTUAL_ENV) {
    const candidate = path.join(opts.env.VIRTUAL_ENV, platform === "win32" ? "Scripts\\rootcause.exe" : "bin/rootcause");
    tried.push(candidate);
    if (isExecutable(candidate, platform)) return { path: candidate, how: "virtualenv" };
  }
  const pathCandidates = onPath("rootcause", opts.env, platform);
  const hit = pathCandidates.find((c) => isExecutable(c, platform));
  if (hit) return { path: hit, how: "PATH" };
  return { path: null, tried: [...tried, "rootcause on the PATH"], configured: false };
}

export interface RunOptions {
  client: string;
  text: string;
  /** Empty: offline, nothing leaves the machine. Else the service the user opted into. */
  server?: string;
  /** The service token from SecretStorage; passed in the environment, never on the command line. */
  token?: string;
  timeoutMs: number;
  maxBytes: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  signal?: AbortSignal;
}

export type ErrorKind =
  | "empty"
  | "too-large"
  | "missing"
  | "too-old"
  | "usage"
  | "quota"
  | "outage"
  | "failed"
  | "invalid-json"
  | "timeout"
  | "cancelled";

export type RunOutcome =
  | { ok: true; result: DiagnosisResult; mode: "offline" | "server"; exitCode: number | null; stderr: string }
  | { ok: false; kind: ErrorKind; message: string; exitCode?: number | null; stderr?: string };

export function clientArgs(server?: string): string[] {
  return server ? ["diagnose", "-", "--json", "--server", server] : ["diagnose", "-", "--offline", "--json"];
}

/** The last lines of the client's stderr, for a message. */
function tail(text: string, lines = 6): string {
  return text.trim().split(/\r?\n/).slice(-lines).join("\n");
}

const OPTION_ERROR = /no such option|got unexpected extra argument|no such command|unrecognized arguments/i;

/** stdout holds one result per line (one here: stdin is one input). */
export function parseOutput(stdout: string): { result: DiagnosisResult } | { problem: string; parsed: boolean } {
  const line = stdout.split(/\r?\n/).find((l) => l.trim().startsWith("{"));
  if (line === undefined) return { problem: "no JSON on standard output", parsed: false };
  let value: unknown;
  try {
    value = JSON.parse(line);
  } catch (e) {
    return { problem: `invalid JSON (${(e as Error).message})`, parsed: false };
  }
  const problem = resultProblem(value);
  return problem ? { problem, parsed: true } : { result: value as DiagnosisResult };
}

/** Classify a finished client run. Exit 1 means "diagnosed", not an error, when stdout holds a result. */
export function interpret(exitCode: number | null, stdout: string, stderr: string, mode: "offline" | "server"): RunOutcome {
  const parsed = parseOutput(stdout);
  if ("result" in parsed) return { ok: true, result: parsed.result, mode, exitCode, stderr };
  const err = tail(stderr);
  const base = { exitCode, stderr };
  if (exitCode === 2 && OPTION_ERROR.test(stderr)) {
    return { ok: false, kind: "too-old", message: `The rootcause client is too old for this extension: ${err}`, ...base };
  }
  if (parsed.parsed) {
    return {
      ok: false,
      kind: "too-old",
      message: `The rootcause client printed a result this extension cannot read (${parsed.problem}); it is probably too old.`,
      ...base,
    };
  }
  switch (exitCode) {
    case 0:
    case 1:
      return {
        ok: false,
        kind: "invalid-json",
        message: `The rootcause client did not print a result (${parsed.problem}): ${stdout.trim().slice(0, 200) || "(empty)"}`,
        ...base,
      };
    case 2:
      return { ok: false, kind: "usage", message: `rootcause: usage or configuration error (exit 2). ${err}`, ...base };
    case 3:
      return { ok: false, kind: "quota", message: `rootcause: the service's daily diagnosis allowance is used up (exit 3). ${err}`, ...base };
    case 4:
      return { ok: false, kind: "outage", message: `rootcause: the service is unreachable, timed out or failed (exit 4). ${err}`, ...base };
    default:
      return {
        ok: false,
        kind: "failed",
        message: `The rootcause client failed (exit ${exitCode ?? "by signal"}). ${err}`,
        ...base,
      };
  }
}

/** Run the client on `text` (stdin) and read its result (stdout). Never rejects. */
export function runClient(opts: RunOptions): Promise<RunOutcome> {
  const bytes = Buffer.from(opts.text, "utf8");
  if (opts.text.trim() === "") {
    return Promise.resolve({ ok: false, kind: "empty", message: "Nothing to diagnose: the text is empty." });
  }
  if (bytes.length > opts.maxBytes) {
    const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
    return Promise.resolve({
      ok: false,
      kind: "too-large",
      message:
        `The text is ${mb(bytes.length)} MB, over the ${mb(opts.maxBytes)} MB limit (rootcause.maxInputMegabytes). ` +
        "Select the part around the failure (tracebacks and each rank's last lines), or raise the limit.",
    });
  }
  const mode = opts.server ? "server" : "offline";
  const env: NodeJS.ProcessEnv = { ...(opts.env ?? process.env), NO_COLOR: "1", PYTHONIOENCODING: "utf-8", PYTHONUTF8: "1" };
  if (opts.server) {
    if (opts.token) env.ROOTCAUSE_TOKEN = opts.token;
  } else {
    delete env.ROOTCAUSE_TOKEN;
  }
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: RunOutcome) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        opts.signal?.removeEventListener("abort", onAbort);
        resolve(o);
      }
    };
    let child: ReturnType<typeof spawn>;
    const group = process.platform !== "win32";
    try {
      child = spawn(opts.client, clientArgs(opts.server), {
        cwd: opts.cwd,
        env,
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
        detached: group,
      });
    } catch (e) {
      resolve({ ok: false, kind: "missing", message: `Cannot start ${opts.client}: ${(e as Error).message}` });
      return;
    }
    const out: Buffer[] = [];
    const errs: Buffer[] = [];
    child.stdout!.on("data", (d: Buffer) => out.push(d));
    child.stderr!.on("data", (d: Buffer) => errs.push(d));
    // On POSIX the client leads its own process group, so a kill reaches whatever it started.
    const signal = (sig: NodeJS.Signals) => {
      try {
        if (group && child.pid) process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        // already gone
      }
    };
    const kill = () => {
      // stop reading too: a grandchild holding the pipes open must not keep us waiting
      child.stdout!.destroy();
      child.stderr!.destroy();
      signal("SIGTERM");
      setTimeout(() => signal("SIGKILL"), 2000).unref();
    };
    const timer = setTimeout(() => {
      kill();
      done({ ok: false, kind: "timeout", message: `The rootcause client did not answer within ${Math.round(opts.timeoutMs / 1000)} s (rootcause.timeoutSeconds).` });
    }, opts.timeoutMs);
    const onAbort = () => {
      kill();
      done({ ok: false, kind: "cancelled", message: "Diagnosis cancelled." });
    };
    opts.signal?.addEventListener("abort", onAbort);
    child.on("error", (e: NodeJS.ErrnoException) => {
      const missing = e.code === "ENOENT" || e.code === "EACCES";
      done({ ok: false, kind: missing ? "missing" : "failed", message: `Cannot start ${opts.client}: ${e.message}` });
    });
    child.on("close", (code) => {
      done(interpret(code, Buffer.concat(out).toString("utf8"), Buffer.concat(errs).toString("utf8"), mode));
    });
    // The client may exit before reading everything (a usage error): ignore EPIPE, the exit code tells.
    child.stdin!.on("error", () => undefined);
    child.stdin!.end(bytes);
  });
}
