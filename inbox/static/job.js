// custos job page: the model's answer as it arrives, from the job's
// stream of chunks. Text is only ever set as textContent, never as markup.
(function () {
  "use strict";
  var meta = function (n) { var m = document.querySelector('meta[name="' + n + '"]'); return m ? m.content : ""; };
  var prefix = meta("custos-prefix"), job = meta("custos-job");
  var answers = document.getElementById("answers"), live = document.getElementById("live");
  var current = null, key = "";
  if (!window.EventSource) { live.textContent = "this browser cannot follow a stream"; return; }

  function answer(c, label) {
    var box = document.createElement("section");
    box.className = "answer";
    var h = document.createElement("h2");
    h.textContent = label;
    var pre = document.createElement("pre");
    box.appendChild(h);
    box.appendChild(pre);
    answers.appendChild(box);
    current = pre;
    key = c.turn + "/" + c.attempt;
    return pre;
  }

  function note(pre, text) {
    var s = document.createElement("em");
    s.textContent = text;
    pre.appendChild(s);
  }

  var es = new EventSource(prefix + "jobs/" + encodeURIComponent(job) + "/stream");
  es.onopen = function () { live.textContent = "live"; };
  es.onerror = function () { live.textContent = "reconnecting…"; };
  es.addEventListener("chunk", function (ev) {
    var c = JSON.parse(ev.data);
    var pre = current;
    if (c.restart) {
      pre = answer(c, "the answer restarted (attempt " + c.attempt + ")");
    } else if (!pre || key !== c.turn + "/" + c.attempt || c.snapshot) {
      pre = answer(c, "answer (message " + c.turn + (c.attempt > 1 ? ", attempt " + c.attempt : "") + ")");
    }
    if (c.text) pre.appendChild(document.createTextNode(c.text));
    if (c.dropped) note(pre, " [… " + c.dropped + " bytes not shown: this page fell behind]");
    if (c.done) { if (c.failed) note(pre, " [the attempt failed]"); current = null; }
  });
})();
