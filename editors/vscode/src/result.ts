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

export interface HangCulprit {
  rank: number;
  confidence: number;
  reason: string;
}

export interface CollectiveSide {
  ranks: string;
  op: string;
  sizes: string;
  dtypes: string[];
  state: string;
}

export interface StackGroup {
  ranks: string;
  count: number;
  frame: string;
  where: string;
  meaning: string;
  meaning_text: string;
}

/** A bundle's hang (docs/result.md#the-hang-section); only what the panel shows. */
export interface HangSection {
  verdict: string;
  summary: string;
  world_size: number;
  culprits: HangCulprit[];
  divergent: { process_group: string; seq: number; sides: CollectiveSide[]; missing_ranks: string } | null;
  stacks: StackGroup[];
  last_collectives: { rank: number }[];
  collateral_ranks: string;
  missing: string[];
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
  /** A bundle's diagnosis only: the hang, rank by rank. */
  hang?: HangSection;
  /** CLI only: the input's name (`-` for standard input). */
  file?: string;
  /** CLI only, when a service diagnosed it: the diagnosis id in the service's history. */
  id?: string;
  /** CLI only, when a service diagnosed it: the result page (a visitor's carries its `?key=`). */
  link?: string;
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === "object" && v !== null && !Array.isArray(v);
const isInt = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v);
const isStr = (v: unknown): v is string => typeof v === "string";
const isStrOrNull = (v: unknown) => v === null || isStr(v);

/** "0-6, 8-15" (as the hang section writes ranks) -> [0, ..., 6, 8, ..., 15]. */
export function parseRanks(text: string): number[] {
  const out: number[] = [];
  for (const part of text.split(",").map((p) => p.trim()).filter(Boolean)) {
    const [lo, hi] = part.split("-").map((n) => Number(n));
    for (let r = lo; r <= (Number.isFinite(hi) ? hi : lo); r++) out.push(r);
  }
  return out;
}

export type RankState = "culprit" | "waiting" | "missing";

/** Each rank's state on the rank map, as rootcause.hangs.report.rank_states gives it: a
 *  culprit, waiting (seen in a stack group or a flight-recorder entry), or without any dump. */
export function rankStates(hang: HangSection): RankState[] {
  const culprits = new Set(hang.culprits.map((c) => c.rank));
  const seen = new Set(hang.last_collectives.map((c) => c.rank));
  for (const g of hang.stacks) for (const r of parseRanks(g.ranks)) seen.add(r);
  const out: RankState[] = [];
  for (let r = 0; r < hang.world_size; r++) out.push(culprits.has(r) ? "culprit" : seen.has(r) ? "waiting" : "missing");
  return out;
}

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
  const hang = value.hang;
  if (hang !== undefined) {
    if (!isObj(hang) || !isStr(hang.verdict) || !isInt(hang.world_size)) return "bad hang section";
    for (const key of ["culprits", "stacks", "last_collectives", "missing"]) {
      if (!Array.isArray(hang[key])) return `bad hang section: no ${key} list`;
    }
    for (const c of hang.culprits as unknown[]) if (!isObj(c) || !isInt(c.rank)) return "bad hang culprit";
    for (const g of hang.stacks as unknown[]) if (!isObj(g) || !isStr(g.ranks) || !isStr(g.frame)) return "bad stack group";
  }
  const rem = value.remediation;
  if (rem !== undefined) {
    if (!isObj(rem) || !Array.isArray(rem.steps) || !isStr(rem.command) || !isStr(rem.verification_command)) {
      return "bad remediation";
    }
  }
  return null;
}
