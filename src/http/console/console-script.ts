/**
 * The console's only script, served from this origin (/console/assets/console.js; the CSP allows
 * no inline script). It calls the operator API with the browser's own Basic credentials:
 * - `[data-replay-event]` buttons: POST /events/{id}/replay ({} or {"handler"}), then poll
 *   GET /events/{id} until the log counts a new attempt, and reload;
 * - `[data-bulk]` boxes: a dry run (POST /events/replay with dryRun) shows the count first; the
 *   second button runs it (with the count as "confirm") and polls GET /events/replays/{id} into
 *   a progress bar; while it runs, Stop cancels it (DELETE /events/replays/{id}).
 * - `[data-refresh-record]` buttons: POST /records/{kind}/{id}/refresh, then poll
 *   GET /records/{kind}/{id} until the mirror's copy was read after the time the page showed, and reload;
 * Text from the server is set with textContent only, never as HTML.
 */
export const CONSOLE_SCRIPT = String.raw`"use strict";
(function () {
  var POLL_MS = 1000;
  function say(el, text, failed) {
    if (!el) return;
    el.textContent = text;
    el.classList.toggle("bad", Boolean(failed));
  }
  function call(method, path, body) {
    var init = { method: method, headers: { accept: "application/json" } };
    if (body !== undefined) {
      init.headers["content-type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    return fetch(path, init).then(function (res) {
      return res.text().then(function (text) {
        var json = null;
        try { json = text ? JSON.parse(text) : null; } catch (e) { json = null; }
        if (!res.ok) {
          var message = json && json.error && json.error.message ? json.error.message : "HTTP " + res.status;
          throw new Error(message);
        }
        return json;
      });
    });
  }
  function pollAttempts(id, before, status) {
    call("GET", "/events/" + encodeURIComponent(id)).then(function (event) {
      if (event && event.attempts > before) {
        say(status, "New attempt recorded; reloading.");
        window.location.reload();
      } else setTimeout(function () { pollAttempts(id, before, status); }, POLL_MS);
    }, function (err) { say(status, "Could not read the event: " + err.message, true); });
  }
  function replayOne(button) {
    var id = button.getAttribute("data-replay-event");
    var handler = button.getAttribute("data-handler");
    var before = Number(button.getAttribute("data-attempts") || "0");
    var status = document.getElementById("replay-status");
    button.disabled = true;
    say(status, "Replaying " + (handler ? "handler " + handler : "every handler") + "…");
    call("POST", "/events/" + encodeURIComponent(id) + "/replay", handler ? { handler: handler } : {}).then(function (answer) {
      var replay = answer && answer.replay ? answer.replay.id : "";
      say(status, "Replay " + replay + " queued; waiting for its attempt…");
      pollAttempts(id, before, status);
    }, function (err) {
      button.disabled = false;
      say(status, "Replay refused: " + err.message, true);
    });
  }
  function recordPath(button) {
    return "/records/" + encodeURIComponent(button.getAttribute("data-refresh-record")) + "/" + encodeURIComponent(button.getAttribute("data-id"));
  }
  function pollRead(button, status) {
    var shownReadAt = button.getAttribute("data-read-at") || "";
    call("GET", recordPath(button)).then(function (story) {
      var readAt = story && story.record ? story.record.readAt : "";
      if (readAt && readAt !== shownReadAt) {
        say(status, "Read from the API; reloading.");
        window.location.reload();
      } else setTimeout(function () { pollRead(button, status); }, POLL_MS);
    }, function (err) { say(status, "Could not read the record: " + err.message, true); });
  }
  function refreshRecord(button) {
    var status = document.getElementById("refresh-status");
    button.disabled = true;
    say(status, "Asking for a read…");
    call("POST", recordPath(button) + "/refresh", {}).then(function () {
      say(status, "Refresh requested; waiting for the read…");
      pollRead(button, status);
    }, function (err) {
      button.disabled = false;
      say(status, "Refresh refused: " + err.message, true);
    });
  }
  function pollReplay(box, id) {
    var bar = box.querySelector("progress");
    var status = box.querySelector("[data-bulk-status]");
    call("GET", "/events/replays/" + encodeURIComponent(id)).then(function (r) {
      if (bar) { bar.max = Math.max(1, r.total); bar.value = r.done + r.failed; bar.hidden = false; }
      var stop = box.querySelector("[data-bulk-stop]");
      if (stop) { stop.hidden = r.state !== "running"; stop.setAttribute("data-bulk-id", r.id); }
      say(status, "Replay " + r.id + ": " + r.done + " done, " + r.failed + " failed of " + r.total + " (" + r.state + ")", r.failed > 0);
      if (r.state === "running") setTimeout(function () { pollReplay(box, id); }, POLL_MS);
    }, function (err) { say(status, "Could not read the replay: " + err.message, true); });
  }
  function stopBulk(box, button) {
    var status = box.querySelector("[data-bulk-status]");
    button.disabled = true;
    call("DELETE", "/events/replays/" + encodeURIComponent(button.getAttribute("data-bulk-id") || "")).then(function (r) {
      say(status, "Replay " + r.id + " " + r.state + ": " + r.withdrawn + " not run, " + r.done + " done, " + r.failed + " failed.");
    }, function (err) {
      button.disabled = false;
      say(status, "Stop refused: " + err.message, true);
    });
  }
  function bulk(box, dryRun) {
    var filter = JSON.parse(box.getAttribute("data-bulk") || "{}");
    var status = box.querySelector("[data-bulk-status]");
    var run = box.querySelector("[data-bulk-run]");
    var count = box.querySelector("[data-bulk-count]");
    if (dryRun) {
      say(status, "Counting…");
      call("POST", "/events/replay", { filter: filter, dryRun: true }).then(function (answer) {
        say(status, "Will replay " + answer.count + " event" + (answer.count === 1 ? "" : "s") + ".");
        if (run) { run.hidden = answer.count === 0; run.textContent = "Replay " + answer.count + " now"; }
        box.setAttribute("data-bulk-counted", String(answer.count));
      }, function (err) { say(status, "Dry run refused: " + err.message, true); });
      return;
    }
    if (run) run.disabled = true;
    if (count) count.disabled = true;
    say(status, "Starting…");
    // The count the operator saw: the API refuses the replay if the filter matches another by now.
    call("POST", "/events/replay", { filter: filter, confirm: Number(box.getAttribute("data-bulk-counted")) }).then(function (answer) {
      say(status, "Replay " + answer.id + " started for " + answer.count + " events.");
      pollReplay(box, answer.id);
    }, function (err) {
      if (run) run.disabled = false;
      if (count) count.disabled = false;
      say(status, "Replay refused: " + err.message, true);
    });
  }
  document.addEventListener("click", function (e) {
    var target = e.target instanceof Element ? e.target.closest("button") : null;
    if (!target) return;
    if (target.hasAttribute("data-replay-event")) return replayOne(target);
    if (target.hasAttribute("data-refresh-record")) return refreshRecord(target);
    var box = target.closest("[data-bulk]");
    if (box && target.hasAttribute("data-bulk-count")) return bulk(box, true);
    if (box && target.hasAttribute("data-bulk-run")) return bulk(box, false);
    if (box && target.hasAttribute("data-bulk-stop")) return stopBulk(box, target);
  });
})();
`;
