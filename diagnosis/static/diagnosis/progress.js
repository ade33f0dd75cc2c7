// Live progress on the result page: poll the API (which waits up to two seconds for the end),
// show the stage that holds the diagnosis, and show the result once it is done.
(function () {
  "use strict";
  var config = JSON.parse(document.getElementById("progress-config").textContent);
  var label = document.getElementById("stage-label");
  var bar = document.getElementById("progress-bar");
  var status = document.getElementById("status");
  var error = document.getElementById("progress-error");
  var failures = 0;

  function show(data) {
    status.textContent = data.status;
    if (config.labels[data.status]) label.textContent = config.labels[data.status];
    if (typeof data.progress === "number") { bar.value = data.progress; bar.textContent = data.progress + " %"; }
    var passed = true;
    document.querySelectorAll("#stages li").forEach(function (item) {
      if (item.dataset.status === data.status) { passed = false; item.setAttribute("aria-current", "step"); }
      else item.removeAttribute("aria-current");
      item.classList.toggle("done", passed && data.status !== "queued");
    });
  }

  function poll() {
    fetch(config.url, {headers: {Accept: "application/json"}, credentials: "same-origin"})
      .then(function (response) {
        if (response.status === 404) throw new Error("gone");
        if (!response.ok) throw new Error("http " + response.status);
        return response.json();
      })
      .then(function (data) {
        failures = 0;
        error.hidden = true;
        show(data);
        // Done or failed: the server renders the result (or the failure) in full.
        if (data.status === "done" || data.status === "failed") window.location.reload();
        else setTimeout(poll, 500);
      })
      .catch(function (problem) {
        failures++;
        error.hidden = false;
        if (problem.message === "gone") {
          error.textContent = "This diagnosis is no longer there: its link expired or it was deleted. Diagnose the log again from the home page.";
          return;
        }
        error.textContent = "Lost touch with the server; retrying… If this lasts, reload the page: the diagnosis goes on without it.";
        setTimeout(poll, Math.min(10000, 1000 * failures));
      });
  }
  setTimeout(poll, 300);
})();
