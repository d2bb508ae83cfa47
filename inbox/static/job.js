// custos job page: what the job does, rendered from its one stream of
// events (package jobevents, as the terminal and starter run --json get
// them): the model's text as it is written, tool calls, decisions, waits,
// results, answers, the end. Text is only ever set as textContent, never
// as markup.
(function () {
  "use strict";
  var meta = function (n) { var m = document.querySelector('meta[name="' + n + '"]'); return m ? m.content : ""; };
  var prefix = meta("custos-prefix"), job = meta("custos-job");
  var answers = document.getElementById("answers"), live = document.getElementById("live");
  var current = null;
  if (!window.EventSource) { live.textContent = "this browser cannot follow a stream"; return; }

  function box(cls, label, text) {
    var s = document.createElement("section");
    s.className = cls;
    var h = document.createElement("h2");
    h.textContent = label;
    var pre = document.createElement("pre");
    if (text) pre.textContent = text;
    s.appendChild(h);
    s.appendChild(pre);
    answers.appendChild(s);
    return pre;
  }

  function step(text) {
    var p = document.createElement("p");
    p.className = "step";
    p.textContent = text;
    answers.appendChild(p);
  }

  function note(pre, text) {
    var s = document.createElement("em");
    s.textContent = text;
    pre.appendChild(s);
  }

  function text(e) {
    var pre = current;
    if (e.restart) {
      pre = current = box("answer", "the answer restarted (attempt " + e.attempt + ")");
    } else if (!pre || e.begin) {
      pre = current = box("answer", "answer (message " + e.turn + (e.attempt > 1 ? ", attempt " + e.attempt : "") + ")");
    }
    if (e.text) pre.appendChild(document.createTextNode(e.text));
    if (e.dropped) note(pre, " [… " + e.dropped + " bytes not shown: this page fell behind]");
    if (e.end) { if (e.failed) note(pre, " [the attempt failed]"); current = null; }
  }

  // Each type of event, as the page shows it; a type it does not know
  // (the vocabulary grows) is left out.
  var render = {
    text: text,
    model: function (e) { if (!e.streamed && e.text) box("answer", "answer (message " + e.turn + ")", e.text); },
    answer: function (e) { if (!e.streamed && e.text) box("answer", "answer", e.text); },
    tool_call: function (e) { step("call " + e.call + ": " + e.tool + " " + e.summary); },
    decision: function (e) { step(e.call + ": " + e.decision + " (" + e.layer + (e.by ? ", by " + e.by : "") + ")" + (e.text ? ": " + e.text : "")); },
    waiting: function (e) { step(e.call + " waits for a person: " + e.tool + " " + e.summary); },
    tool_result: function (e) { step(e.call + (e.ok ? " done: " : " failed: ") + e.summary); },
    park: function (e) { step("waiting (" + e.reason + "): " + e.text); },
    error: function (e) { step("error: " + e.text); },
    note: function (e) { step(e.kind + ": " + e.text); },
    result: function (e) { step("the job " + e.status + (e.error ? ": " + e.error : "")); live.textContent = "the job " + e.status; }
  };

  var es = new EventSource(prefix + "jobs/" + encodeURIComponent(job) + "/stream");
  es.onopen = function () { live.textContent = "live"; answers.textContent = ""; current = null; };
  es.onerror = function () { if (es.readyState !== EventSource.CLOSED) live.textContent = "reconnecting…"; };
  es.addEventListener("job-event", function (ev) {
    var e = JSON.parse(ev.data);
    var f = render[e.type];
    if (f) f(e);
    if (e.type === "result") es.close();
  });
})();
