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
    choice++;
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

  // Each choice (a drop, a file or folder chosen) is numbered: what reads a file and answers later
  // (the extraction, an archive's trailer, a folder's walk) is dropped when another came since.
  var choice = 0;

  function chooseFile(file) {
    var mine = choice;
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
        note.textContent = "The log " + file.name + " is " + size(file.size) + ": above the limit of " +
          size(maxBytes) + " for a log, and compressed. Decompress it and choose it again: the page " +
          "then sends only its evidence.";
        return;
      }
      note.textContent = "The log " + file.name + " (" + size(file.size) + ") will be sent whole.";
      return;
    }
    form.dataset.blocked = "1";  // until the extraction replaces the file
    note.textContent = "Reading the log " + file.name + " (" + size(file.size) + ")…";
    Promise.all([file.text(), loadPatterns()]).then(function (read) {
      if (mine !== choice) return;
      var picked = extract(read[0], read[1]);
      if (file.size <= maxBytes && picked.keptBytes + picked.lines > file.size / 2) {
        // Most of the file is evidence: sent whole, as the CLI does.
        delete form.dataset.blocked;
        note.textContent = "The log " + file.name + " (" + size(file.size) + ") will be sent whole: " +
          "most of it is evidence.";
        return;
      }
      var body = new Blob([picked.text], {type: "text/plain"});
      if (body.size > maxBytes) {
        form.dataset.blocked = "1";
        note.textContent = "Even the evidence of the log " + file.name + " is above the limit of " +
          size(maxBytes) + " for a log: run rootcause diagnose " + file.name + " --offline on your " +
          "machine instead.";
        return;
      }
      var transfer = new DataTransfer();
      transfer.items.add(new File([body], file.name, {type: "text/plain"}));
      input.files = transfer.files;
      delete form.dataset.blocked;
      note.textContent = "Large log: " + picked.kept + " of " + picked.lines + " lines will be sent (" +
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
      if (mine !== choice) return;
      form.dataset.blocked = "1";
      note.textContent = "Could not pick out the evidence of " + file.name + " in this page. Run " +
        "rootcause diagnose " + file.name + " on your machine: it sends only the evidence.";
    });
  }

  // Several files, a folder, or one archive, are one job's bundle: sent as they are, judged
  // together for a hang (the service masks every file before anything reads it). The pre-check
  // holds them to the service's bundle limits (diagnosis/bundles.py), named in the same words.
  var ARCHIVE = /\.(tar\.gz|tgz|tar|zip)$/i, GZIP = /\.(tar\.gz|tgz)$/i;
  var bundle = {
    maxFiles: parseInt(form.dataset.bundleMaxFiles, 10),
    maxFileBytes: parseInt(form.dataset.bundleMaxFileBytes, 10),
    maxTotal: parseInt(form.dataset.bundleMaxTotal, 10),
    maxArchive: parseInt(form.dataset.bundleMaxArchive, 10),
    maxExpanded: parseInt(form.dataset.bundleMaxExpanded, 10),
    ratio: parseInt(form.dataset.bundleRatio, 10)
  };

  function count(n, one, many) {
    return n.toLocaleString("en") + " " + (n === 1 ? one : many);
  }

  function started(files) {
    delete form.dataset.blocked;
    var old = form.querySelector("#evidence-preview");
    if (old) old.remove();
    if (files.length) box.value = "";
  }

  function refuse(text) {
    form.dataset.blocked = "1";
    note.textContent = text;
  }

  // `what` names what was given: "the folder job" for a folder, else "" (files).
  function chooseFiles(files, what) {
    choice++;
    // One file that is no archive is a log, wherever it came from (so the service takes it).
    if (files.length === 1 && !ARCHIVE.test(files[0].name)) {
      chooseFile(files[0]);
      return;
    }
    started(files);
    if (!files.length) {
      note.textContent = what ? capital(what) + " holds no file." : "";
      if (what) form.dataset.blocked = "1";
      return;
    }
    if (files.length === 1 && ARCHIVE.test(files[0].name)) {
      chooseArchive(files[0]);
      return;
    }
    if (files.length > bundle.maxFiles) {  // a folder's walk stops past the limit
      refuse("More than " + count(bundle.maxFiles, "file", "files") + (what ? " in " + what : "") +
        ": a bundle holds at most " + count(bundle.maxFiles, "file", "files") + ". Send the " +
        "ranks' files only, or run rootcause diagnose DIR --offline on your machine.");
      return;
    }
    var shown = "A bundle of " + count(files.length, "file", "files") + (what ? " from " + what : "");
    var total = 0, biggest = files[0], archive = null;
    for (var i = 0; i < files.length; i++) {
      total += files[i].size;
      if (files[i].size > biggest.size) biggest = files[i];
      if (!archive && ARCHIVE.test(files[i].name)) archive = files[i];
    }
    if (archive) {
      refuse(shown + " holds an archive, " + archive.name + ": send that archive alone, or the " +
        "files without it.");
      return;
    }
    if (biggest.size > bundle.maxFileBytes) {
      refuse(shown + ": " + biggest.name + " is " + size(biggest.size) + ", above the bundle limit of " +
        size(bundle.maxFileBytes) + " a file. Run rootcause diagnose DIR --offline on your machine.");
      return;
    }
    if (total > bundle.maxTotal) {
      refuse(shown + ", " + size(total) + " together: above the bundle limit of " + size(bundle.maxTotal) +
        " for the files together. Send a .tar.gz of them (up to " + size(bundle.maxArchive) +
        ", expanding to at most " + size(bundle.maxExpanded) + "), or run rootcause diagnose DIR " +
        "--offline on your machine.");
      return;
    }
    note.textContent = shown + " (" + size(total) + " together) will be diagnosed together as " +
      "one job's bundle.";
  }

  function capital(text) {
    return text.charAt(0).toUpperCase() + text.slice(1);
  }

  // One archive: its own size, and for a gzip the expanded size its trailer declares (ISIZE), held
  // to what the service allows an archive of that size (its bytes times the ratio, at least 1 MB,
  // and never above the bundle's expanded limit): refused here as it would be there.
  function chooseArchive(file) {
    var mine = choice;
    var shown = "The archive " + file.name + " (" + size(file.size) + ")";
    if (file.size > bundle.maxArchive) {
      refuse(shown + " is above the limit of " + size(bundle.maxArchive) + " for an archive. Run " +
        "rootcause diagnose " + file.name + " --offline on your machine.");
      return;
    }
    var ready = shown + " will be diagnosed as one job's bundle: expanded, it may hold up to " +
      size(bundle.maxExpanded) + " in at most " + count(bundle.maxFiles, "file", "files") + ".";
    if (!GZIP.test(file.name) || file.size < 18) {
      note.textContent = ready;
      return;
    }
    form.dataset.blocked = "1";  // until the trailer is read
    note.textContent = "Reading " + file.name + "…";
    file.slice(file.size - 4).arrayBuffer().then(function (buffer) {
      if (mine !== choice) return;
      var declared = new DataView(buffer).getUint32(0, true);
      var cap = Math.min(bundle.maxExpanded, Math.max(file.size * bundle.ratio, 1 << 20));
      if (declared > cap) {
        refuse(shown + " expands to " + size(declared) + ", above the " + size(cap) + " an archive " +
          "of its size may expand to. Run rootcause diagnose " + file.name + " --offline on your " +
          "machine.");
        return;
      }
      delete form.dataset.blocked;
      note.textContent = ready;
    });
  }

  // A dropped folder is walked (webkitGetAsEntry, readEntries in batches), its files named by their
  // path inside the drop; the walk stops past the bundle's file count. Resolves to the files.
  function walk(entries) {
    var found = [], over = false;
    function visit(entry) {
      if (over) return Promise.resolve();
      if (entry.isFile) {
        return new Promise(function (resolve, reject) { entry.file(resolve, reject); }).then(function (file) {
          found.push(new File([file], entry.fullPath.replace(/^\//, ""), {type: file.type, lastModified: file.lastModified}));
          if (found.length > bundle.maxFiles) over = true;
        });
      }
      var reader = entry.createReader();
      function batch() {
        return new Promise(function (resolve, reject) { reader.readEntries(resolve, reject); }).then(function (more) {
          if (!more.length || over) return undefined;
          return more.reduce(function (done, child) {
            return done.then(function () { return visit(child); });
          }, Promise.resolve()).then(batch);
        });
      }
      return batch();
    }
    return entries.reduce(function (done, entry) {
      return done.then(function () { return visit(entry); });
    }, Promise.resolve()).then(function () {
      found.sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
      return found;
    });
  }

  function folderWords(names) {
    if (!names.length) return "";
    if (names.length === 1) return "the folder " + names[0];
    return "the folders " + names.slice(0, -1).join(", ") + " and " + names[names.length - 1];
  }

  // The chosen files become the form's: what the Diagnose button sends.
  function take(files, what) {
    var transfer = new DataTransfer();
    for (var i = 0; i < files.length; i++) transfer.items.add(files[i]);
    input.files = transfer.files;
    chooseFiles(input.files, what);
  }

  input.addEventListener("change", function () {
    chooseFiles(input.files, "");
  });

  // A folder chosen where the browser offers it (webkitdirectory): its files, named by their path
  // in it. The input has no name: the files go through the form's own input.
  var folder = form.querySelector("#id_log_folder");
  if (folder && "webkitdirectory" in folder) {
    form.querySelectorAll(".folder-choice").forEach(function (e) { e.hidden = false; });
    folder.addEventListener("change", function () {
      var files = [], top = [];
      for (var i = 0; i < folder.files.length; i++) {
        var file = folder.files[i], path = file.webkitRelativePath || file.name;
        var first = path.split("/")[0];
        if (top.indexOf(first) < 0) top.push(first);
        files.push(new File([file], path, {type: file.type, lastModified: file.lastModified}));
      }
      folder.value = "";
      take(files, folderWords(top.length === 1 ? top : []) || "the folder");
    });
  }

  ["dragenter", "dragover"].forEach(function (type) {
    zone.addEventListener(type, function (event) { event.preventDefault(); zone.classList.add("over"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    zone.addEventListener(type, function () { zone.classList.remove("over"); });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    var items = event.dataTransfer.items, entries = [], folders = [];
    // The entries are read now: the drop's items are gone once the handler returns.
    for (var i = 0; items && i < items.length; i++) {
      var entry = items[i].kind === "file" && items[i].webkitGetAsEntry ? items[i].webkitGetAsEntry() : null;
      if (entry) entries.push(entry);
      if (entry && entry.isDirectory) folders.push(entry.name);
    }
    if (!folders.length) {  // files only: as they came
      var dropped = event.dataTransfer.files;
      if (dropped.length) take(dropped, "");
      return;
    }
    var mine = ++choice;
    started(entries);
    form.dataset.blocked = "1";  // until the walk is done
    note.textContent = "Reading " + folderWords(folders) + "…";
    walk(entries).then(function (files) {
      if (mine === choice) take(files, folderWords(folders));
    }).catch(function () {
      if (mine === choice) refuse("Could not read " + folderWords(folders) + " in this page. Choose its files, or " +
        "send a .tar.gz of it.");
    });
  });
  form.addEventListener("submit", function (event) {
    if (form.dataset.blocked) {
      event.preventDefault();
      note.focus();
    }
  });
})();
