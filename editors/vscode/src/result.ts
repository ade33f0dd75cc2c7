// The typed result `rootcause diagnose --json` prints: docs/result.md and docs/result.schema.json
// of the repository. Only what the panel and the diagnostics read is checked here; unknown keys
// are ignored, as the Python side does.

export interface Failure {
  slug: string;
  title: string;
  category: string;
  confidence: number;
  /** certain (0.9 and above), likely (0.6 and above) or possible; absent from older clients. */
  confidence_level?: "certain" | "likely" | "possible";
  /** The confidence in words, "possible — confirm with …" naming what would decide it. */
  confidence_words?: string;
}

export interface RankRow {
  rank: number;
  slug: string;
  first_error_line: number;
  collateral: boolean;
}

export interface CollateralFailure {
  slug: string;
  ranks: number[];
}

export interface EvidenceLine {
  line: number;
  text: string;
  file?: string;
}

export interface Remediation {
  steps: string[];
  command: string;
  verification_command: string;
  verification_expect: string;
}

export interface DiagnosisResult {
  outcome: "diagnosed" | "no_match";
  failure: Failure | null;
  root_cause: string | null;
  initiating_rank: number | null;
  ranks: RankRow[];
  collateral: CollateralFailure[];
  evidence: EvidenceLine[];
  missing_facts: string[];
  encyclopedia_url: string | null;
  catalogue_version: string;
  remediation?: Remediation;
  masking?: Record<string, number>;
  /** CLI only: the input's name (`-` for standard input). */
  file?: string;
  /** CLI only, when a service diagnosed it: the diagnosis id in the service's history. */
  id?: string;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v);
const isStr = (v: unknown): v is string => typeof v === "string";
const isStrOrNull = (v: unknown) => v === null || isStr(v);

/** Why `value` is not a DiagnosisResult, or null when it is one. */
export function resultProblem(value: unknown): string | null {
  if (!isObj(value)) return "not a JSON object";
  if (value.outcome !== "diagnosed" && value.outcome !== "no_match") return "no outcome";
  for (const key of ["ranks", "collateral", "evidence", "missing_facts"]) {
    if (!Array.isArray(value[key])) return `no ${key} list`;
  }
  if (!isStr(value.catalogue_version)) return "no catalogue_version";
  if (!isStrOrNull(value.root_cause) || !isStrOrNull(value.encyclopedia_url)) return "bad root_cause";
  if (!(value.initiating_rank === null || isInt(value.initiating_rank))) return "bad initiating_rank";
  const f = value.failure;
  if (value.outcome === "diagnosed") {
    if (!isObj(f) || !isStr(f.slug) || !isStr(f.title) || typeof f.confidence !== "number") {
      return "a diagnosed result without its failure";
    }
    if (f.confidence_words !== undefined && !isStr(f.confidence_words)) return "bad confidence_words";
  }
  for (const r of value.ranks as unknown[]) {
    if (!isObj(r) || !isInt(r.rank) || !isInt(r.first_error_line) || !isStr(r.slug)) return "bad rank row";
  }
  for (const c of value.collateral as unknown[]) {
    if (!isObj(c) || !isStr(c.slug) || !Array.isArray(c.ranks)) return "bad collateral entry";
  }
  for (const e of value.evidence as unknown[]) {
    if (!isObj(e) || !isInt(e.line) || !isStr(e.text)) return "bad evidence line";
  }
  for (const m of value.missing_facts as unknown[]) if (!isStr(m)) return "bad missing fact";
  const rem = value.remediation;
  if (rem !== undefined) {
    if (!isObj(rem) || !Array.isArray(rem.steps) || !isStr(rem.command) || !isStr(rem.verification_command)) {
      return "bad remediation";
    }
  }
  return null;
}
