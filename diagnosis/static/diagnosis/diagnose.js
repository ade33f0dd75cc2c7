// The paste box: sample logs, the drop zone, and for a big file the evidence picked out in the
// browser before upload (extract.js, the CLI's extraction ported). Without this script the form
// still posts as it is.
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

  // The lines the CLI's extraction keeps (extract.js, a port of rootcause/extract.py): the
  // lines the engine reads from each fingerprint's and marker's hit, the lines around errors,
  // each rank's last lines, the head and the tail. The others are sent as empty lines, so the
  // line numbers the result cites stay those of the whole file.
  var patterns = null;
  function loadPatterns() {
    if (!patterns) {
      patterns = fetch(form.dataset.patterns, {credentials: "same-origin"}).then(function (r) {
        if (!r.ok) throw new Error("patterns " + r.status);
        return r.json();
      });
      patterns.catch(function () { patterns = null; });
    }
    return patterns;
  }

  var KEY_BEGIN = /-----BEGIN [A-Z ]*PRIVATE KEY-----/, KEY_END = /-----END [A-Z ]*PRIVATE KEY-----/;

  function extract(text, spec) {
    var picked = window.RootcauseExtract.select(text, spec);
    var lines = picked.lines, n = lines.length;
    var out = new Array(n).fill(""), keptBytes = 0;
    picked.kept.forEach(function (i) { out[i] = lines[i]; keptBytes += lines[i].length + 1; });
    // A private key block (BEGIN to END) goes as the service's masker leaves a key: its kept
    // BEGIN line as <PRIVATE_KEY>, the rest empty. No part of a key leaves the page.
    for (var i = 0; i < n; i++) {
      if (!KEY_BEGIN.test(lines[i])) continue;
      var end = i + 1;
      while (end < Math.min(n, i + 200) && !KEY_END.test(lines[end])) end++;
      if (end >= Math.min(n, i + 200)) continue;  // no END line: not a key block
      out[i] = out[i] && "<PRIVATE_KEY>";
      for (var j = i + 1; j <= end; j++) out[j] = "";
      i = end;
    }
    return {text: out.join("\n") + "\n", lines: n, kept: picked.kept.length, keptBytes: keptBytes};
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
    Promise.all([file.text(), loadPatterns()]).then(function (read) {
      var picked = extract(read[0], read[1]);
      if (file.size <= maxBytes && picked.keptBytes + picked.lines > file.size / 2) {
        // Most of the file is evidence: sent whole, as the CLI does.
        delete form.dataset.blocked;
        note.textContent = file.name + " (" + size(file.size) + ") will be sent whole: most of it is evidence.";
        return;
      }
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
    }).catch(function () {
      form.dataset.blocked = "1";
      note.textContent = "Could not pick out the evidence of " + file.name + " in this page. Run " +
        "rootcause diagnose " + file.name + " on your machine: it sends only the evidence.";
    });
  }

  // Several files, or one archive, are one job's bundle: sent as they are, judged together for a
  // hang (the service masks every file before anything reads it).
  var ARCHIVE = /\.(tar\.gz|tgz|tar|zip)$/i;
  function chooseFiles(files) {
    if (files.length === 1 && !ARCHIVE.test(files[0].name)) {
      chooseFile(files[0]);
      return;
    }
    delete form.dataset.blocked;
    var old = form.querySelector("#evidence-preview");
    if (old) old.remove();
    if (!files.length) { note.textContent = ""; return; }
    box.value = "";
    var total = 0;
    for (var i = 0; i < files.length; i++) total += files[i].size;
    if (total > maxBytes) {
      form.dataset.blocked = "1";
      note.textContent = files.length + " files, " + size(total) + ": above the " + size(maxBytes) +
        " limit. Send a .tar.gz of them, or run rootcause diagnose DIR --offline on your machine.";
      return;
    }
    note.textContent = (files.length === 1 ? files[0].name : files.length + " files") + " (" +
      size(total) + ") will be diagnosed together as one job's bundle.";
  }

  input.addEventListener("change", function () {
    chooseFiles(input.files);
  });
  ["dragenter", "dragover"].forEach(function (type) {
    zone.addEventListener(type, function (event) { event.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    zone.addEventListener(type, function () { zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    var dropped = event.dataTransfer.files;
    if (!dropped.length) return;
    var transfer = new DataTransfer();
    for (var i = 0; i < dropped.length; i++) transfer.items.add(dropped[i]);
    input.files = transfer.files;
    chooseFiles(input.files);
  });
  form.addEventListener("submit", function (event) {
    if (form.dataset.blocked) {
      event.preventDefault();
      note.focus();
    }
  });
})();
