// Finding and running the local client: `rootcause diagnose - --offline --json` with the log on
// standard input, `rootcause diagnose BUNDLE --json` on a folder or archive, `rootcause feedback`.
// No `vscode` import here: the tests run this module against the real client (and service).
import { spawn } from "node:child_process";
import { accessSync, constants, statSync } from "node:fs";
import * as path from "node:path";
import { DiagnosisResult, resultProblem } from "./result";

/** The light client without a service to take it from: a clone of the repository. */
export const INSTALL_FROM_CLONE = "pip install .";

/** The service's own release (`/downloads/index.json`, encyclopedia/downloads.py): the install
 *  line of its client wheel, `pip install <server>/downloads/rootcause-<version>-py3-none-any.whl`,
 *  or null when the service cannot be asked or serves no wheel. */
export async function installLine(server: string, timeoutMs = 5000): Promise<string | null> {
  if (!server) return null;
  try {
    const response = await fetch(`${server.replace(/\/+$/, "")}/downloads/index.json`, {
      signal: AbortSignal.timeout(timeoutMs),
      headers: { Accept: "application/json" },
    });
    if (!response.ok) return null;
    const index = (await response.json()) as { wheel?: { url?: unknown } | null };
    const url = index?.wheel?.url;
    return typeof url === "string" && /^https?:\/\/\S+\.whl$/.test(url) ? `pip install ${url}` : null;
  } catch {
    return null;
  }
}

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
  /** The log, on standard input. */
  text?: string;
  /** Or a bundle (a folder or a .tar.gz/.tar/.zip of one job's per-rank files), by its path: the
   *  client reads it (offline) or uploads it as one archive (with a service), within its limits. */
  file?: string;
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

export function clientArgs(server?: string, file = "-"): string[] {
  return server ? ["diagnose", file, "--json", "--server", server] : ["diagnose", file, "--offline", "--json"];
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

/** The environment of a client run: no colours, UTF-8; the SecretStorage token for the service
 *  (in the environment, never argv), and no token at all for an offline run. */
function clientEnv(base: NodeJS.ProcessEnv | undefined, server?: string, token?: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...(base ?? process.env), NO_COLOR: "1", PYTHONIOENCODING: "utf-8", PYTHONUTF8: "1" };
  if (!server) delete env.ROOTCAUSE_TOKEN;
  else if (token) env.ROOTCAUSE_TOKEN = token;
  return env;
}

interface Spawned {
  code: number | null;
  stdout: string;
  stderr: string;
}

type SpawnFailure = { ok: false; kind: "missing" | "failed" | "timeout" | "cancelled"; message: string };

/** Run the client with `args`, `input` on stdin; its exit code and output, or why it did not run
 *  or finish. Never rejects. */
function spawnClient(
  client: string,
  args: string[],
  opts: { input: Buffer; env: NodeJS.ProcessEnv; timeoutMs: number; cwd?: string; signal?: AbortSignal },
): Promise<Spawned | SpawnFailure> {
  return new Promise((resolve) => {
    let settled = false;
    const done = (o: Spawned | SpawnFailure) => {
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
      child = spawn(client, args, {
        cwd: opts.cwd,
        env: opts.env,
        stdio: ["pipe", "pipe", "pipe"],
        windowsHide: true,
        detached: group,
      });
    } catch (e) {
      resolve({ ok: false, kind: "missing", message: `Cannot start ${client}: ${(e as Error).message}` });
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
      done({ ok: false, kind: "cancelled", message: "Cancelled." });
    };
    opts.signal?.addEventListener("abort", onAbort);
    child.on("error", (e: NodeJS.ErrnoException) => {
      const missing = e.code === "ENOENT" || e.code === "EACCES";
      done({ ok: false, kind: missing ? "missing" : "failed", message: `Cannot start ${client}: ${e.message}` });
    });
    child.on("close", (code) => {
      done({ code, stdout: Buffer.concat(out).toString("utf8"), stderr: Buffer.concat(errs).toString("utf8") });
    });
    // The client may exit before reading everything (a usage error): ignore EPIPE, the exit code tells.
    child.stdin!.on("error", () => undefined);
    child.stdin!.end(opts.input);
  });
}

/** Run the client on `text` (stdin) or on the bundle `file`, and read its result (stdout). Never rejects. */
export async function runClient(opts: RunOptions): Promise<RunOutcome> {
  let input = Buffer.alloc(0);
  if (opts.file === undefined) {
    const text = opts.text ?? "";
    input = Buffer.from(text, "utf8");
    if (text.trim() === "") return { ok: false, kind: "empty", message: "Nothing to diagnose: the text is empty." };
    if (input.length > opts.maxBytes) {
      const mb = (n: number) => (n / 1024 / 1024).toFixed(1);
      return {
        ok: false,
        kind: "too-large",
        message:
          `The text is ${mb(input.length)} MB, over the ${mb(opts.maxBytes)} MB limit (rootcause.maxInputMegabytes). ` +
          "Select the part around the failure (tracebacks and each rank's last lines), or raise the limit.",
      };
    }
  }
  const mode = opts.server ? "server" : "offline";
  const ran = await spawnClient(opts.client, clientArgs(opts.server, opts.file), {
    input,
    env: clientEnv(opts.env, opts.server, opts.token),
    timeoutMs: opts.timeoutMs,
    cwd: opts.cwd,
    signal: opts.signal,
  });
  if ("ok" in ran) return ran.kind === "cancelled" ? { ...ran, message: "Diagnosis cancelled." } : ran;
  return interpret(ran.code, ran.stdout, ran.stderr, mode);
}

/** "Was this right?" on a diagnosis the service keeps (`rootcause feedback`, the service's
 *  `POST /api/v1/diagnoses/{id}/feedback`). */
export interface FeedbackOptions {
  client: string;
  /** The diagnosis's link (a visitor's carries its `?key=`) or id. */
  diagnosis: string;
  server: string;
  token?: string;
  right: boolean;
  /** With a wrong verdict: the right class's slug, or `none` for a run that did not fail. */
  correctClass?: string;
  note?: string;
  timeoutMs: number;
  cwd?: string;
  env?: NodeJS.ProcessEnv;
}

export type FeedbackOutcome =
  | { ok: true; message: string }
  | { ok: false; kind: "missing" | "too-old" | "refused" | "rate-limited" | "outage" | "failed" | "timeout" | "cancelled"; message: string };

export function feedbackArgs(opts: Pick<FeedbackOptions, "diagnosis" | "server" | "right" | "correctClass" | "note">): string[] {
  const args = ["feedback", opts.diagnosis, opts.right ? "--right" : "--wrong", "--server", opts.server];
  if (!opts.right && opts.correctClass) args.push("--class", opts.correctClass);
  if (opts.note) args.push("--note", opts.note);
  return args;
}

/** Send the verdict through the client; what it said, by its exit code (0 recorded, 2 refused,
 *  3 rate limited, 4 the service out). Never rejects. */
export async function sendFeedback(opts: FeedbackOptions): Promise<FeedbackOutcome> {
  const ran = await spawnClient(opts.client, feedbackArgs(opts), {
    input: Buffer.alloc(0),
    env: clientEnv(opts.env, opts.server, opts.token),
    timeoutMs: opts.timeoutMs,
    cwd: opts.cwd,
  });
  if ("ok" in ran) return ran;
  const said = tail(ran.stderr).replace(/^error: /gm, "");
  switch (ran.code) {
    case 0:
      return { ok: true, message: ran.stdout.trim() || "recorded" };
    case 2:
      if (/no such command/i.test(ran.stderr)) {
        return { ok: false, kind: "too-old", message: `The rootcause client is too old to send feedback: ${said}` };
      }
      return { ok: false, kind: "refused", message: `rootcause: ${said}` };
    case 3:
      return { ok: false, kind: "rate-limited", message: `rootcause: ${said}` };
    case 4:
      return { ok: false, kind: "outage", message: `rootcause: ${said}` };
    default:
      return { ok: false, kind: "failed", message: `The rootcause client failed (exit ${ran.code ?? "by signal"}). ${said}` };
  }
}
