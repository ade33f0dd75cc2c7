// The paste box: sample logs, the drop zone, and for a big file the evidence picked out in the
// browser before upload (the idea of rootcause/cli/extract.py, simplified). Without this script
// the form still posts as it is.
(function () {
  "use strict";
  var form = document.getElementById("diagnose");
  if (!form) return;
  var box = form.querySelector("#id_log_text");
  var input = form.querySelector("#id_log_file");
  var zone = form.querySelector("#dropzone");
  var note = form.querySelector("#selection");
  var maxBytes = parseInt(form.dataset.maxBytes, 10);
  var extractAbove = parseInt(form.dataset.extractAbove, 10);

  form.querySelectorAll("[data-sample]").forEach(function (link) {
    link.addEventListener("click", function (event) {
      event.preventDefault();
      fetch(link.dataset.sample).then(function (r) { return r.text(); }).then(function (text) {
        box.value = text;
        clearFile();
        box.focus();
        note.textContent = "Sample loaded: press Diagnose.";
      });
    });
  });

  function clearFile() {
    input.value = "";
    delete form.dataset.blocked;
  }

  // Lines the engine reads: tracebacks, error lines and the lines around them, each rank's
  // last lines, the head and the tail. The others are sent as empty lines, so the line numbers
  // the result cites stay those of the whole file.
  var TROUBLE = /traceback|exception|error|fatal|killed|abort|timed? ?out|out of memory|segmentation fault|watchdog|nccl|core dumped|signal|failed/i;
  var RANK = /\[(?:rank|default|Rank|RANK)(?: |: )?(\d{1,5})\]|\brank=(\d{1,5})\b|^(\d{1,5}): /;
  var HEAD = 50, TAIL = 200, AROUND = 10, RANK_TAIL = 20;

  function extract(text) {
    var lines = text.split("\n");
    var n = lines.length;
    var keep = new Uint8Array(n);
    var i, j;
    for (i = 0; i < Math.min(HEAD, n); i++) keep[i] = 1;
    for (i = Math.max(0, n - TAIL); i < n; i++) keep[i] = 1;
    var rankLines = {};
    var inTraceback = false;
    for (i = 0; i < n; i++) {
      var line = lines[i];
      var m = RANK.exec(line);
      if (m) {
        var rank = m[1] || m[2] || m[3];
        (rankLines[rank] = rankLines[rank] || []).push(i);
        if (rankLines[rank].length > RANK_TAIL) rankLines[rank].shift();
      }
      if (/Traceback \(most recent call last\)/.test(line)) inTraceback = true;
      if (inTraceback) {
        keep[i] = 1;
        // A traceback ends at its first line that is not indented: the exception itself.
        if (!/Traceback/.test(line) && /^\S/.test(line.replace(RANK, "").replace(/^\s*[:\]]\s?/, ""))) inTraceback = false;
      }
      if (TROUBLE.test(line)) {
        for (j = Math.max(0, i - AROUND); j <= Math.min(n - 1, i + AROUND); j++) keep[j] = 1;
      }
    }
    Object.keys(rankLines).forEach(function (r) {
      rankLines[r].forEach(function (k) { keep[k] = 1; });
    });
    var out = new Array(n), kept = 0, keptBytes = 0;
    for (i = 0; i < n; i++) {
      if (keep[i]) { out[i] = lines[i]; kept++; keptBytes += lines[i].length + 1; }
      else out[i] = "";
    }
    return {text: out.join("\n"), lines: n, kept: kept, keptBytes: keptBytes};
  }

  function size(bytes) {
    if (bytes >= 1 << 20) return (bytes / (1 << 20)).toFixed(1) + " MB";
    if (bytes >= 1024) return (bytes / 1024).toFixed(1) + " KB";
    return bytes + " bytes";
  }

  function preview(text) {
    var shown = [], lines = text.split("\n");
    for (var i = 0; i < lines.length && shown.length < 40; i++) {
      if (lines[i]) shown.push((i + 1) + ": " + lines[i]);
    }
    return shown.join("\n");
  }

  function chooseFile(file) {
    delete form.dataset.blocked;
    var old = form.querySelector("#evidence-preview");
    if (old) old.remove();
    if (!file) { note.textContent = ""; return; }
    box.value = "";
    var gz = /\.gz$/i.test(file.name);
    // A plain file above the server's limit is always reduced: it is never uploaded whole.
    if (gz || (file.size <= extractAbove && file.size <= maxBytes)) {
      if (file.size > maxBytes) {
        form.dataset.blocked = "1";
        note.textContent = file.name + " is " + size(file.size) + ": above the " + size(maxBytes) +
          " limit and compressed. Decompress it and choose it again: the page then sends only its evidence.";
        return;
      }
      note.textContent = file.name + " (" + size(file.size) + ") will be sent whole.";
      return;
    }
    form.dataset.blocked = "1";  // until the extraction replaces the file
    note.textContent = "Reading " + file.name + " (" + size(file.size) + ")…";
    file.text().then(function (text) {
      var picked = extract(text);
      var body = new Blob([picked.text], {type: "text/plain"});
      if (body.size > maxBytes) {
        form.dataset.blocked = "1";
        note.textContent = "Even the evidence of " + file.name + " is above the " + size(maxBytes) +
          " limit: run rootcause diagnose " + file.name + " --offline on your machine instead.";
        return;
      }
      var transfer = new DataTransfer();
      transfer.items.add(new File([body], file.name, {type: "text/plain"}));
      input.files = transfer.files;
      delete form.dataset.blocked;
      note.textContent = "Large file: " + picked.kept + " of " + picked.lines + " lines will be sent (" +
        size(picked.keptBytes) + " of " + size(file.size) + "); " + (picked.lines - picked.kept) +
        " lines were left out (sent as empty lines, so line numbers stay the file's).";
      var details = document.createElement("details");
      details.id = "evidence-preview";
      var summary = document.createElement("summary");
      summary.textContent = "What will be sent";
      var pre = document.createElement("pre");
      pre.textContent = preview(picked.text);
      details.appendChild(summary);
      details.appendChild(pre);
      note.after(details);
    });
  }

  input.addEventListener("change", function () {
    chooseFile(input.files[0]);
  });
  ["dragenter", "dragover"].forEach(function (type) {
    zone.addEventListener(type, function (event) { event.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    zone.addEventListener(type, function () { zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    var file = event.dataTransfer.files[0];
    if (!file) return;
    var transfer = new DataTransfer();
    transfer.items.add(file);
    input.files = transfer.files;
    chooseFile(file);
  });
  form.addEventListener("submit", function (event) {
    if (form.dataset.blocked) {
      event.preventDefault();
      note.focus();
    }
  });
})();
