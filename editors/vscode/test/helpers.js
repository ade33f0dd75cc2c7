// Loads the extension's modules (built into out/ by `npm run build`) with `vscode` resolved to the
// fake, and finds the real client for the protocol tests.
"use strict";
const Module = require("node:module");
const fs = require("node:fs");
const os = require("node:os");
const path = require("node:path");

const FAKE = path.join(__dirname, "fake-vscode.js");
const originalResolve = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  return request === "vscode" ? FAKE : originalResolve.call(this, request, ...rest);
};

const root = path.resolve(__dirname, "..");
const repo = path.resolve(root, "..", "..");
const vscode = require("vscode");

/** The real client: ROOTCAUSE_CLIENT (set by `make vscode`), else the repository's .venv. */
function realClient() {
  const fromEnv = process.env.ROOTCAUSE_CLIENT;
  if (fromEnv) {
    if (!fs.existsSync(fromEnv)) throw new Error(`ROOTCAUSE_CLIENT=${fromEnv} does not exist`);
    return fromEnv;
  }
  const venv = path.join(repo, ".venv", "bin", "rootcause");
  return fs.existsSync(venv) ? venv : null;
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rootcause-vscode-test-"));
process.on("exit", () => fs.rmSync(tmp, { recursive: true, force: true }));
let n = 0;

/** A fake client: a shell script with `body`, executable. */
function fakeClient(body) {
  const file = path.join(tmp, `client-${++n}.sh`);
  fs.writeFileSync(file, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return file;
}

/** The smallest valid result, with overrides. */
function minimalResult(extra = {}) {
  return {
    outcome: "diagnosed",
    failure: { slug: "activation-oom", title: "Activation Memory Spike", category: "memory", confidence: 0.9 },
    root_cause: "CUDA out of memory.",
    initiating_rank: null,
    ranks: [],
    collateral: [],
    evidence: [{ line: 2, text: "torch.OutOfMemoryError: CUDA out of memory." }],
    missing_facts: [],
    encyclopedia_url: "/encyclopedia/activation-oom/",
    catalogue_version: "test",
    remediation: { steps: ["Lower the batch size."], command: "echo fix", verification_command: "echo verify", verification_expect: "verify" },
    masking: {},
    file: "-",
    ...extra,
  };
}

function load(name) {
  return require(path.join(root, "out", name));
}

module.exports = { vscode, fake: vscode._test, realClient, fakeClient, minimalResult, load, root, repo, tmp };
