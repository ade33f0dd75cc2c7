// The evidence of a big log, picked out in the browser: a port of rootcause/extract.py (and
// of the parts of rootcause/evidence.py and rootcause/engine/scanning.py it follows), so that
// the page keeps the lines the CLI keeps: each line a catalogue fingerprint or an engine marker
// flags and every line the engine's look-backs read from it (the traceback above an error, the
// lines a rank or a time stamp is inherited from, the progress lines before an error), ten
// lines around errors, the first line that names each rank, each rank's last lines, the head
// and the tail. The patterns come from the server (/extraction.json: the catalogue's
// fingerprints as JavaScript regular expressions) so that both sides scan for the same things.
//
// What it does not port: the masker. The CLI scans the masked text and also keeps the first line
// that teaches the masker each host or user name; the page reads the lines as they are.
// tests/js/ checks, line for line, that both pick the same lines of the logs in tests/logs.
//
// A plain script: in a page it defines window.RootcauseExtract, under node it is a module.
(function (root, factory) {
  "use strict";
  if (typeof module === "object" && module.exports) module.exports = factory();
  else root.RootcauseExtract = factory();
})(typeof self !== "undefined" ? self : this, function () {
  "use strict";

  var LOOKBACK = 400;
  var HEAD_CHARS = 240;
  var CHUNK_BYTES = 1 << 20;
  var RANK_SEARCH_CHARS = 64 << 10;
  var MAX_HITS_PER_PATTERN = 200;
  var MAX_MARKED_RANK = 256;
  var RECOVERY_PROGRESS_LINES = 3;
  var DEFAULTS = {head: 50, tail: 200, rankTail: 20, around: 10};

  // rootcause/evidence.py
  var PROGRESS = /^.{0,400}?\d(?:it\/s|s\/it)\]/;
  var MARKDOWN = /^(?:>\s?)+|^```\w*\s*$/;
  var ANSI = /\x1b\[[0-9;]{0,30}[A-Za-z]/g;
  var IPY_FRAME = /^(?:File (?<path>[^\n]{1,500}?):(?<line>\d{1,7}), in (?:[\w.<>]{0,300}\.)?(?<fn>[\w<>]{1,100})|Cell (?<cell>In ?\[\d{1,6}\]), line (?<cline>\d{1,7})(?:, in (?<cfn>[\w<>]{1,100}))?)/;
  var IPY_ARROW = /^-{1,8}> ?(?=\d)/;
  var BOX = /^[\s│┃|]*[│┃╭╰╮╯─━]+\s?/;
  var BOX_TAIL = /\s*[│┃]\s*$/;
  var PREFIX = new RegExp("^(?:" + [
    "\\((?<proc>[A-Za-z_]\\w{0,63} pid=\\d{1,9}(?:, ip=[^)\\s]{1,64})?)\\)\\s",
    "\\([A-Za-z_][\\w.-]{0,63}, rank=(?<skyrank>\\d{1,5}), pid=\\d{1,9}(?:, ip=[^)\\s]{1,64})?\\)\\s",
    "\\[\\d{1,5},mpirank:(?<smrank>\\d{1,5}),[^\\]\\s]{1,64}\\]<std(?:out|err)>:\\s?",
    "\\[pod\\/(?<pod>[^\\]\\s/]{1,128})\\/[^\\]\\s]{1,64}\\]\\s",
    "(?<syslog>[A-Z][a-z]{2} [ \\d]\\d \\d\\d:\\d\\d:\\d\\d) [^\\s:]{1,64} (?<unit>[\\w.@-]{1,64}\\[\\d{1,9}\\]):\\s",
    "\\d{1,7}\\.\\d{1,3}s\\t\\d{1,7}\\t",
    "(?<svc>[A-Za-z0-9_.<>-]{1,64}-\\d{1,3})\\s{1,24}\\|\\s?",
    "\\[(?<mpi>\\d{1,5}),(?<mpirank>\\d{1,5})\\]<std(?:out|err)>:\\s?",
    "(?<host>[A-Za-z0-9_.<>-]{1,64}):\\s(?=\\[(?:rank|default)\\d)",
    "(?<pdsh><(?:HOST|IP)_\\d{1,4}>|[A-Za-z][A-Za-z0-9_.-]{0,62}[0-9]):\\s"
  ].join("|") + ")");
  var RANK_PREFIX = /^\s?(?:\[(?:rank|default)(?<r1>\d{1,5})\]:?\s?|(?<r2>\d{1,5}):\s)/;
  var TS_PREFIX = /^\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d)?\]?\s/;
  var GLUED = /\[(?:rank|default)(\d{1,5})\]:\s?/y;
  var SOFT_RANK = /\[[Rr][Aa][Nn][Kk][ :]{0,2}(?<a>\d{1,5})\]|\brank=(?<b>\d{1,5})\b|\b[Rr]ank (?<c>\d{1,5}):|^\[rank(?<d>\d{1,5})\]\s|\bfailed \(exitcode: -?\d+\) local_rank: (?<e>\d{1,5})|\bsrun: error: [^\s:]{1,80}: task (?<f>\d{1,5}): /;
  var GLOG = /(?:^|\[)[IWEF](\d\d)(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?\b/;
  var US = /(?<!\d)(\d\d)\/(\d\d)\/\d{4},? (\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?!\d)/;
  var SYSLOG = /\b(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) ([ \d]\d) (\d\d):(\d\d):(\d\d)\b/;
  var ISO = /(?<!\d)(\d{4})-(\d\d)-(\d\d)[ T_](\d\d):(\d\d):(\d\d)(?:[.,](\d{1,9}))?(?!\d)/;
  var TRACEBACKISH = /^(?:$|\s|Traceback \(most recent|During handling|The above exception|[\^~]|File "|[A-Za-z_][\w.]{0,120}(?:Error|Exception|Interrupt|Exit|Failure)\b|[│┃╭╰])/;
  var FRAME_LINE = /^\s*File "[^"\n]{1,500}", line \d/;
  // evidence.LOOKAHEAD_GAP, LOOKAHEAD_LINES and the exception line that ends a traceback.
  var LOOKAHEAD_GAP = 6, LOOKAHEAD_LINES = 200;
  var EXCEPTION_LINE = /^[A-Za-z_][\w.]{0,120}(?:Error|Exception|Interrupt|Exit)\b/;
  var LAUNCHER_FIELD = /^\s*(?:exitcode|traceback|error_file|time|host)\s*:/;
  var LAUNCHER_RANK = /^\s*rank\s*:\s*(\d{1,5})\s*\(local_rank/;
  // rootcause/engine/scanning.py
  var TRAINING_LINE = /\b(?:step|epoch|iter|iteration)\b[ =:\[]{0,3}\d|\b(?:train_|val_|eval_)?loss['"]?\s{0,3}[:=]\s{0,3}[0-9]/i;
  // One pattern for the 256 rank markers (each reported once per chunk): the number is checked.
  var MARKER = /\[(?:rank|default|Rank|RANK)(?: |: )?(\d{1,3})\]|\brank=(\d{1,3})\b|^(\d{1,3}): /g;
  // rootcause/extract.py
  var RANK_MENTION = /\[(?:rank|default|Rank|RANK)(?: |: )?(\d{1,5})\]|\brank=(\d{1,5})\b|^(\d{1,5}): |^\[\d{1,5},(\d{1,5})\]<std/gm;

  function pyStrip(text) { return text.replace(/^\s+|\s+$/g, ""); }

  function cleanLine(line) {
    if (line.indexOf("\r") >= 0) {
      var parts = line.split("\r").filter(function (p) { return pyStrip(p) !== ""; });
      line = parts.length ? parts[parts.length - 1] : "";
    }
    if (line.indexOf("\x1b[") >= 0) line = line.replace(ANSI, "");
    if (">`".indexOf(line.slice(0, 1)) >= 0) line = line.replace(MARKDOWN, "");
    if ((line.indexOf("it/s]") >= 0 || line.indexOf("s/it]") >= 0) && line.length < 100000) {
      for (;;) {
        var m = PROGRESS.exec(line);
        if (!m || m[0].length >= line.length) break;
        line = line.slice(m[0].length);
      }
    }
    return line;
  }

  function ipythonFrame(line) {
    var m = IPY_FRAME.exec(line);
    if (m) {
      var g = m.groups;
      if (g.path) return '  File "' + g.path + '", line ' + g.line + ", in " + g.fn;
      return '  File "' + g.cell + '", line ' + g.cline + ", in " + (g.cfn || "<cell>");
    }
    m = IPY_ARROW.exec(line);
    return m ? "    " + line.slice(m[0].length) : line;
  }

  function hasTimestamp(head) {
    return ISO.test(head) || GLOG.test(head) || US.test(head) || SYSLOG.test(head);
  }

  // parse_line: the line without its prefixes, its rank, host, whether the rank came from a
  // stream prefix, and whether it has a time stamp (the engine only asks whether it has one).
  function parseLine(raw) {
    var line = cleanLine(raw);
    var host = null, rank = null, explicit = false, m;
    var stamp = TS_PREFIX.exec(line);
    if (stamp) line = line.slice(stamp[0].length);
    var syslogTime = null;
    m = PREFIX.exec(line);
    if (m) {
      var g = m.groups;
      if (g.svc || g.proc || g.pod || g.unit) {
        host = g.svc || g.proc || g.pod || g.unit;
        syslogTime = g.syslog || null;
      } else if ((g.mpirank || g.smrank || g.skyrank) !== undefined) {
        rank = parseInt(g.mpirank || g.smrank || g.skyrank, 10);
        explicit = true;
      } else {
        host = g.host || g.pdsh || null;
      }
      line = line.slice(m[0].length);
      if (!stamp) {
        stamp = TS_PREFIX.exec(line);
        if (stamp) line = line.slice(stamp[0].length);
      }
    }
    if (rank === null) {
      m = RANK_PREFIX.exec(line);
      if (m) {
        rank = parseInt(m.groups.r1 || m.groups.r2, 10);
        explicit = true;
        line = line.slice(m[0].length);
        var m2 = RANK_PREFIX.exec(line);
        if (m2 && m2.groups.r1) line = line.slice(m2[0].length);
      }
    }
    var glued = Math.max(line.lastIndexOf("[rank"), line.lastIndexOf("[default"));
    if (glued > 0) {
      GLUED.lastIndex = glued;
      m = GLUED.exec(line);
      if (m) {
        rank = parseInt(m[1], 10);
        explicit = true;
        line = line.slice(GLUED.lastIndex);
      }
    }
    if ("FC-".indexOf(line.slice(0, 1)) >= 0) line = ipythonFrame(line);
    if ("│┃╭╰".indexOf(line.slice(0, 1)) >= 0 && line.length < 10000) {
      line = "  " + line.replace(BOX, "").replace(BOX_TAIL, "");
    }
    var head = line.slice(0, HEAD_CHARS);
    if (rank === null) {
      m = SOFT_RANK.exec(head);
      if (m) {
        var v = m.groups;
        rank = parseInt(v.a || v.b || v.c || v.d || v.e || v.f, 10);
      }
    }
    var ts = hasTimestamp(stamp ? stamp[0] : head);
    if (!ts && syslogTime) ts = hasTimestamp(syslogTime);
    return {text: line, rank: rank, host: host, explicit: explicit, ts: ts};
  }

  function tracebackish(text) { return TRACEBACKISH.test(text); }

  // LineContext over a window of lines, remembering the lowest line its walks read (the
  // extractor's _Recorder). Results are cached per line, as the engine's are: a walk stops at
  // a line an earlier walk resolved.
  function Context(lines) {
    this.lines = lines;
    this.parsedCache = new Map();
    this.resolvedCache = new Map();
    this.low = lines.length;
    this.high = -1;
  }
  Context.prototype.parsed = function (i) {
    if (i < this.low) this.low = i;
    if (i > this.high) this.high = i;
    var info = this.parsedCache.get(i);
    if (info === undefined) {
      info = parseLine(this.lines[i]);
      this.parsedCache.set(i, info);
    }
    return info;
  };
  Context.prototype.resolve = function (i) {
    var done = this.resolvedCache.get(i);
    if (done !== undefined) return done;
    var info = this.parsed(i);
    var rank = info.rank, ts = info.ts;
    var launcher = LAUNCHER_FIELD.test(info.text) || LAUNCHER_RANK.test(info.text);
    if (launcher && !info.explicit) {
      rank = this.launcherBlockRank(i);
    } else if ((rank === null || !ts) && tracebackish(info.text)) {
      for (var j = i - 1; j > Math.max(-1, i - LOOKBACK); j--) {
        var prev = this.resolvedCache.get(j) || this.parsed(j);
        if (prev.host !== info.host) continue;
        if (info.explicit && prev.rank !== rank) continue;
        if (rank === null) rank = prev.rank;
        if (!ts) ts = prev.ts;
        if ((rank !== null && ts) || !tracebackish(prev.text)) break;
        if (this.resolvedCache.has(j)) break;
      }
    }
    var resolved = {text: info.text, rank: rank, host: info.host, explicit: info.explicit, ts: ts};
    this.resolvedCache.set(i, resolved);
    return resolved;
  };
  Context.prototype.launcherBlockRank = function (i) {
    for (var j = i; j > Math.max(-1, i - 8); j--) {
      var m = LAUNCHER_RANK.exec(this.parsed(j).text);
      if (m) return parseInt(m[1], 10);
    }
    return null;
  };
  Context.prototype.inTraceback = function (j, text) {
    if (tracebackish(text)) return true;
    return j > 0 && FRAME_LINE.test(this.parsed(j - 1).text);
  };
  // The walk of frames() and chained_after(): back over the traceback lines of i's stream.
  Context.prototype.tracebackWalk = function (i) {
    var me = this.resolve(i);
    for (var j = i - 1; j > Math.max(-1, i - LOOKBACK); j--) {
      var info = this.parsed(j);
      if (info.host !== me.host) continue;
      if (me.explicit) {
        if (info.rank !== me.rank) continue;
      } else if (info.explicit) {
        return;
      }
      if (!this.inTraceback(j, info.text)) return;
    }
  };

  Context.prototype.sameStream = function (me, info) {
    if (info.host !== me.host) return false;
    return !(me.explicit && info.rank !== me.rank) && !(!me.explicit && info.explicit);
  };
  // frames_after(): a message printed before its traceback. The traceback of i's stream that
  // starts within LOOKAHEAD_GAP lines after i, read up to its exception line, its first line
  // that is not part of it, or LOOKAHEAD_LINES lines.
  Context.prototype.framesAfter = function (i) {
    var me = this.resolve(i);
    var n = this.lines.length, start = -1, j, info;
    for (j = i + 1; j < Math.min(n, i + 1 + LOOKAHEAD_GAP); j++) {
      info = this.parsed(j);
      if (!this.sameStream(me, info)) continue;
      if (/^\s*Traceback \(most recent call last\)/.test(info.text)) { start = j; break; }
    }
    if (start < 0) return;
    for (j = start + 1; j < Math.min(n, start + 1 + LOOKAHEAD_LINES); j++) {
      info = this.parsed(j);
      if (!this.sameStream(me, info)) continue;
      if (!this.inTraceback(j, info.text)) return;
      if (EXCEPTION_LINE.test(info.text)) return;
    }
  };

  function resumptionWalk(lines, i) {
    var found = 0, low = i;
    for (var j = i - 1; j > Math.max(-1, i - 1 - LOOKBACK); j--) {
      low = j;
      if (TRAINING_LINE.test(lines[j].slice(0, 400))) {
        found++;
        if (found >= RECOVERY_PROGRESS_LINES) break;
      }
    }
    return low;
  }

  // Python's re syntax as the server sends it is already JavaScript's (see /extraction.json).
  function compilePatterns(spec) {
    var all = [];
    spec.signals.forEach(function (s, index) {
      all.push({source: s.source, flags: s.flags, kind: s.kind, inFrame: s.in_frame, signal: index});
    });
    spec.internal.forEach(function (s) {
      all.push({source: s.source, flags: s.flags, internal: s.name});
    });
    var compiled = [];
    all.forEach(function (p, pid) {
      try {
        p.regex = new RegExp(p.source, p.flags + "g");
      } catch (error) {
        return;  // a pattern this engine cannot read: its lines are not flagged here
      }
      p.pid = pid;
      compiled.push(p);
    });
    // One test per pattern: irregexp's quick checks of a pattern's literal parts make that far
    // cheaper than one alternation of all of them.
    var filters = compiled.map(function (p) {
      return {regex: new RegExp(p.source, p.flags), patterns: [p]};
    });
    var byPid = [];
    compiled.forEach(function (p) { byPid[p.pid] = p; });
    return {patterns: byPid, filters: filters, markerBase: all.length};
  }

  // The (line, pattern) hits of a chunk in the order Hyperscan reports them: by where the
  // first match ends, then by pattern; each rank marker once per chunk, each pattern at most
  // MAX_HITS_PER_PATTERN times.
  function scanChunk(compiled, own) {
    var hits = [], counts = new Map(), markersHere = new Set();
    for (var k = 0; k < own.length; k++) {
      var line = own[k], found = [];
      for (var f = 0; f < compiled.filters.length; f++) {
        var filter = compiled.filters[f];
        if (!filter.regex.test(line)) continue;
        for (var p = 0; p < filter.patterns.length; p++) {
          var pattern = filter.patterns[p];
          pattern.regex.lastIndex = 0;
          var m = pattern.regex.exec(line);
          if (!m) continue;
          var count = counts.get(pattern.pid) || 0;
          if (count >= MAX_HITS_PER_PATTERN) continue;
          counts.set(pattern.pid, count + 1);
          found.push([m.index + m[0].length, pattern.pid]);
        }
      }
      if (line.indexOf("ank") >= 0 || line.indexOf("default") >= 0 || line.indexOf("RANK") >= 0 ||
          line.indexOf(": ") >= 0) {
        MARKER.lastIndex = 0;
        var mark;
        while ((mark = MARKER.exec(line)) !== null) {
          var digits = mark[1] || mark[2] || mark[3];
          var rank = parseInt(digits, 10);
          if (String(rank) === digits && rank < MAX_MARKED_RANK && !markersHere.has(rank)) {
            markersHere.add(rank);
            found.push([mark.index + mark[0].length, compiled.markerBase + rank]);
          }
          if (mark[0].length === 0) MARKER.lastIndex++;
        }
      }
      found.sort(function (a, b) { return a[0] - b[0] || a[1] - b[1]; });
      for (var h = 0; h < found.length; h++) hits.push([k, found[h][1]]);
    }
    return hits;
  }

  function utf8Length(text) {
    if (!/[^\x00-\x7f]/.test(text)) return text.length;
    var bytes = 0;
    for (var i = 0; i < text.length; i++) {
      var c = text.charCodeAt(i);
      if (c < 0x80) bytes += 1;
      else if (c < 0x800) bytes += 2;
      else if (c >= 0xd800 && c < 0xdc00) { bytes += 4; i++; }
      else bytes += 3;
    }
    return bytes;
  }

  // The log's lines as iter_line_chunks yields them: chunks of at most 1 MiB ending at a line
  // break, \r\n read as \n, NUL bytes dropped.
  function splitChunks(text) {
    var raw = text.split("\n");
    var endsWithNewline = raw.length > 1 && raw[raw.length - 1] === "";
    if (endsWithNewline) raw.pop();
    var sizes = raw.map(function (line) { return utf8Length(line) + 1; });
    if (!endsWithNewline && raw.length) sizes[sizes.length - 1] -= 1;
    var lines = raw.map(function (line) {
      if (line.indexOf("\0") >= 0) line = line.replace(/\0/g, "");
      return line.endsWith("\r") ? line.slice(0, -1) : line;
    });
    var total = sizes.reduce(function (a, b) { return a + b; }, 0);
    var chunks = [], start = 0;
    while (start < lines.length) {
      var end = start, bytes = 0;
      if (total > CHUNK_BYTES) {
        while (end < lines.length && bytes + sizes[end] <= CHUNK_BYTES) bytes += sizes[end++];
        if (end === start) bytes += sizes[end++];  // a line longer than a chunk (the CLI cuts it)
      } else {
        end = lines.length;
        bytes = total;
      }
      chunks.push([start, end]);
      total -= bytes;
      start = end;
    }
    return {lines: lines, chunks: chunks};
  }

  // Rank -> the last `size` line indexes (in `lines`, from `from`) that name it.
  function mentions(pattern, lines, from, size) {
    var out = new Map();
    for (var n = from; n < lines.length; n++) {
      var line = lines[n];
      pattern.lastIndex = 0;
      var m;
      while ((m = pattern.exec(line)) !== null) {
        if (m[0].length === 0) { pattern.lastIndex++; continue; }
        var digits = m[1] || m[2] || m[3] || m[4];
        var rank = parseInt(digits, 10);
        var found = out.get(rank);
        if (!found) out.set(rank, found = []);
        if (!found.length || found[found.length - 1] !== n) {
          found.push(n);
          if (found.length > size) found.shift();
        }
      }
    }
    return out;
  }

  // The 0-based indexes of the lines to send, sorted; `options` may set head, tail, rankTail
  // and around (the CLI's HEAD_LINES, TAIL_LINES, RANK_TAIL_LINES and AROUND_ERRORS).
  function select(text, spec, options) {
    var o = Object.assign({}, DEFAULTS, options || {});
    var compiled = spec.compiled || (spec.compiled = compilePatterns(spec));
    var split = splitChunks(text);
    var all = split.lines;
    var kept = new Uint8Array(all.length);
    var carry = -1;
    var markersSeen = new Set();
    var rankTails = new Map();
    split.chunks.forEach(function (bounds) {
      var base = bounds[0], end = bounds[1];
      var offset = Math.min(LOOKBACK, base);
      var first = base - offset;
      var lines = all.slice(first, end);  // the previous chunk's last lines, then this one's
      var own = all.slice(base, end);
      var ctx = new Context(lines);
      function keep(low, high) {
        for (var k = Math.max(low, 0); k <= Math.min(high, lines.length - 1); k++) kept[first + k] = 1;
        if (high >= lines.length) carry = Math.max(carry, first + high);
      }
      if (carry >= base) keep(offset, carry - first);
      if (base < o.head) keep(offset, o.head - 1 - first);
      var ranks = new Set();
      scanChunk(compiled, own).forEach(function (hit) {
        var k = offset + hit[0], pid = hit[1];
        if (pid >= compiled.markerBase) {
          ranks.add(pid - compiled.markerBase);
          if (!markersSeen.has(pid)) {
            markersSeen.add(pid);
            keep(k, k);
          }
          return;
        }
        var pattern = compiled.patterns[pid];
        ctx.low = k;
        ctx.high = k;
        ctx.resolve(k);
        var after = 0;
        if (pattern.internal !== undefined) {
          if (pattern.internal === "traceback" || pattern.internal === "exception") {
            ctx.low = Math.min(ctx.low, resumptionWalk(lines, k));
            after = o.around;
          } else if (pattern.internal === "launcher_rank") {
            for (var j = k - 1; j > Math.max(-1, k - 5); j--) ctx.parsed(j);
          }
        } else {
          if (pattern.kind === "error" || pattern.inFrame) ctx.tracebackWalk(k);
          if (pattern.inFrame) ctx.framesAfter(k);
          if (pattern.kind === "error") after = o.around;
        }
        keep(after ? ctx.low - o.around : ctx.low, Math.max(k + after, ctx.high));
      });
      rankTailsOf(own, base, ranks, rankTails, o.rankTail);
    });
    for (var i = Math.max(0, all.length - o.tail); i < all.length; i++) kept[i] = 1;
    rankTails.forEach(function (tail) { tail.forEach(function (index) { kept[index] = 1; }); });
    var out = [];
    for (var n = 0; n < all.length; n++) if (kept[n]) out.push(n);
    return {lines: all, kept: out};
  }

  // _rank_tails: each rank's last lines, looked for in the end of the chunk, and in the whole
  // chunk only for the ranks its markers show whose lines stop before that end.
  function rankTailsOf(own, base, ranks, rankTails, size) {
    // The search starts at the line holding the character RANK_SEARCH_CHARS before the end.
    var total = own.reduce(function (a, line) { return a + line.length + 1; }, -1);
    var from = 0;
    if (total > RANK_SEARCH_CHARS) {
      var start = total - RANK_SEARCH_CHARS, pos = 0;
      for (from = 0; from < own.length; from++) {
        if (start <= pos + own[from].length) break;
        pos += own[from].length + 1;
      }
    }
    var found = mentions(RANK_MENTION, own, from, size);
    var missing = [];
    ranks.forEach(function (r) { if (!found.has(r)) missing.push(r); });
    if (missing.length && from > 0) {
      var numbers = missing.sort(function (a, b) { return a - b; }).join("|");
      var only = new RegExp("\\[(?:rank|default|Rank|RANK)(?: |: )?(" + numbers + ")\\]|\\brank=(" +
        numbers + ")\\b|^(" + numbers + "): ", "gm");
      mentions(only, own, 0, size).forEach(function (lines, rank) { found.set(rank, lines); });
    }
    found.forEach(function (lines, rank) {
      var tail = (rankTails.get(rank) || []).concat(lines.map(function (n) { return base + n; }));
      rankTails.set(rank, tail.slice(-size));
    });
  }

  return {select: select, parseLine: parseLine, DEFAULTS: DEFAULTS};
});
