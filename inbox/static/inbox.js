// custos inbox: live list, answers, keyboard. No framework, no build step.
// The server renders every piece of text (escaped by html/template); this
// script only moves server-rendered HTML into place and reads data-*
// attributes, it never builds markup from strings.
(function () {
  "use strict";
  var meta = function (n) { var m = document.querySelector('meta[name="' + n + '"]'); return m ? m.content : ""; };
  var prefix = meta("custos-prefix"), csrf = meta("custos-csrf");
  var selected = new Set(), reasons = new Map(), focusKey = null, stream = null, stopped = false;
  // drafts are the messages being typed, by job: a redrawn list keeps them.
  var drafts = new Map();
  // answered are calls whose answer counted, with when: a list drawn from
  // a refresh that began before the answer must not bring them back.
  var answered = new Map();
  var $ = function (s, el) { return (el || document).querySelector(s); };
  var $$ = function (s, el) { return Array.prototype.slice.call((el || document).querySelectorAll(s)); };

  var byInput = $("#by");
  if (byInput && !byInput.readOnly) {
    var saved = localStorage.getItem("custos-by");
    if (saved) byInput.value = saved;
    byInput.addEventListener("change", function () { localStorage.setItem("custos-by", byInput.value.trim()); });
  }

  function calls() { return $$("article.call"); }
  function keyOf(el) { return el.getAttribute("data-key"); }
  function byKey(k) { return calls().filter(function (c) { return keyOf(c) === k; })[0] || null; }

  // restore re-applies what the person was doing to a freshly drawn list.
  function restore() {
    var now = Date.now();
    answered.forEach(function (at, k) { if (now - at > 10000) answered.delete(k); });
    calls().forEach(function (c) {
      if (answered.has(keyOf(c))) { c.remove(); return; }
      var k = keyOf(c);
      $(".sel", c).checked = selected.has(k);
      c.classList.toggle("selected", selected.has(k));
      if (reasons.has(k)) $(".reason", c).value = reasons.get(k);
    });
    $$(".messagebox").forEach(function (m) {
      var j = m.getAttribute("data-job");
      if (drafts.has(j)) $(".message-text", m).value = drafts.get(j);
    });
    var live = new Set(calls().map(keyOf));
    selected.forEach(function (k) { if (!live.has(k)) selected.delete(k); });
    var f = focusKey && byKey(focusKey);
    if (f) { f.classList.add("focused"); } else { focusKey = null; }
    bulkBar();
    tick();
  }

  function replaceList(html) {
    var active = document.activeElement, typing = active && active.classList && active.classList.contains("reason") ? keyOf(active.closest("article.call")) : null;
    var writing = active && active.classList && active.classList.contains("message-text") ? active.closest(".messagebox").getAttribute("data-job") : null;
    var range = document.createRange();
    range.selectNodeContents($("#list"));
    $("#list").replaceChildren(range.createContextualFragment(html));
    restore();
    var c = typing && byKey(typing);
    if (c) $(".reason", c).focus();
    var m = writing && $$(".messagebox").filter(function (x) { return x.getAttribute("data-job") === writing; })[0];
    if (m) $(".message-text", m).focus();
  }

  // sendMessage sends the job the text of its message box and says what
  // became of it there; a message the job took clears the box.
  function sendMessage(box) {
    var job = box.getAttribute("data-job"), ta = $(".message-text", box), text = ta.value;
    if (!text.trim()) return;
    var id = (window.crypto && crypto.randomUUID) ? crypto.randomUUID() : String(Date.now()) + Math.random();
    var out = $(".message-outcome", box);
    box.classList.add("busy");
    send("message", { job: job, text: text, id: id }).then(function (res) {
      var o = res.outcomes[0];
      showOutcome(o);
      if (o.applied) { drafts.delete(job); ta.value = ""; }
      out.hidden = false; out.textContent = (o.applied ? "" : "did not count: ") + o.text;
      out.className = "message-outcome " + (o.applied ? "applied" : "refused");
    }).catch(function (e) {
      out.hidden = false; out.textContent = "not sent: " + e.message; out.className = "message-outcome refused";
    }).finally(function () { box.classList.remove("busy"); });
  }

  function setLive(text, cls) { var l = $("#live"); l.textContent = text; l.className = cls || ""; }

  function connect() {
    if (stopped) return;
    if (!window.EventSource) { poll(); return; }
    stream = new EventSource(prefix + "events");
    stream.addEventListener("list", function (e) { replaceList(e.data); setLive("live", "ok"); });
    stream.onerror = function () { setLive("reconnecting…", "warn"); };
  }
  function poll() {
    if (stopped) return;
    fetch(prefix + "list", { credentials: "same-origin" }).then(function (r) { return r.text(); })
      .then(function (t) { replaceList(t); setLive("live (polling)", "ok"); })
      .catch(function () { setLive("reconnecting…", "warn"); })
      .finally(function () { setTimeout(poll, 2000); });
  }

  // Countdown to each call's deadline.
  function tick() {
    var now = Date.now();
    $$(".deadline").forEach(function (d) {
      var s = Math.round((Date.parse(d.getAttribute("data-deadline")) - now) / 1000);
      d.textContent = s > 0 ? "denied in " + fmt(s) : "timing out";
      d.classList.toggle("soon", s <= 15);
    });
  }
  function fmt(s) { return s >= 3600 ? Math.floor(s / 3600) + " h " + Math.floor(s % 3600 / 60) + " min" : s >= 60 ? Math.floor(s / 60) + " min " + (s % 60) + " s" : s + " s"; }
  setInterval(tick, 1000);

  function endOfDay() { var d = new Date(); d.setHours(23, 59, 59, 0); return d.toISOString(); }

  // answerFor is the answer the call's controls say for decision.
  function answerFor(c, decision, reason) {
    var a = { job: c.getAttribute("data-job"), call: c.getAttribute("data-call"), decision: decision };
    if (decision === "deny" || decision === "never") {
      var r = reason !== undefined ? reason : $(".reason", c).value.trim();
      if (r) a.reason = r;
    }
    if (decision === "grant") {
      var f = $(".grant-for", c).value;
      a.decision = "allow";
      a.grant = { scope: $(".grant-scope", c).value };
      if (f === "eod") a.grant.until = endOfDay(); else a.grant.for = f;
    }
    return a;
  }

  function send(path, body) {
    if (byInput && !byInput.readOnly) body.by = byInput.value.trim();
    return fetch(prefix + path, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Custos-CSRF": csrf },
      body: JSON.stringify(body)
    }).then(function (r) {
      if (!r.ok) return r.text().then(function (t) { throw new Error(t.trim() || r.statusText); });
      return r.json();
    });
  }

  function answer(list) {
    if (!list.length) return;
    list.forEach(function (a) { var c = byKey(a.job + "/" + a.call); if (c) c.classList.add("busy"); });
    send("decide", { answers: list }).then(function (res) { res.outcomes.forEach(showOutcome); })
      .catch(function (e) {
        list.forEach(function (a) { showOutcome({ job: a.job, call: a.call, applied: false, text: "not sent: " + e.message }); });
      });
  }

  // showOutcome logs what became of an answer; a call whose answer counted
  // leaves the page, one whose answer did not stays, marked, with why.
  function showOutcome(o) {
    var li = document.createElement("li");
    li.className = o.applied ? "applied" : "refused";
    li.textContent = (o.applied ? "" : "did not count: ") + o.text;
    var log = $("#outcomes");
    log.insertBefore(li, log.firstChild);
    while (log.children.length > 20) log.removeChild(log.lastChild);
    var c = byKey(o.job + "/" + o.call);
    if (!c) return;
    c.classList.remove("busy");
    var p = $(".outcome", c);
    p.hidden = false;
    p.textContent = li.textContent;
    p.className = "outcome " + li.className;
    if (o.applied) {
      answered.set(keyOf(c), Date.now());
      selected.delete(keyOf(c));
      if (focusKey === keyOf(c)) moveFocus(1) || moveFocus(-1);
      c.remove();
      bulkBar();
    } else {
      c.classList.add("stale");
    }
  }

  function bulkBar() {
    $("#bulk").hidden = selected.size === 0;
    $("#nsel").textContent = selected.size;
  }
  function toggle(c, on) {
    var k = keyOf(c);
    if (on === undefined) on = !selected.has(k);
    if (on) selected.add(k); else selected.delete(k);
    $(".sel", c).checked = on;
    c.classList.toggle("selected", on);
    bulkBar();
  }
  function bulk(decision) {
    var reason = $("#bulk-reason").value.trim();
    var list = Array.from(selected).map(byKey).filter(Boolean).map(function (c) { return answerFor(c, decision, reason); });
    answer(list);
  }

  function focusCall(c) {
    calls().forEach(function (x) { x.classList.remove("focused"); });
    if (!c) { focusKey = null; return false; }
    focusKey = keyOf(c);
    c.classList.add("focused");
    c.focus({ preventScroll: true });
    c.scrollIntoView({ block: "nearest" });
    return true;
  }
  function moveFocus(step) {
    var all = calls(), i = all.findIndex(function (c) { return keyOf(c) === focusKey; });
    var next = all[i < 0 ? (step > 0 ? 0 : all.length - 1) : i + step];
    return next ? focusCall(next) : false;
  }

  document.addEventListener("click", function (e) {
    var t = e.target.closest("button");
    if (!t) {
      // A click on a call (not on its controls) makes it the keyboard's.
      var a = e.target.closest("article.call");
      if (a && !e.target.closest("input, select, pre")) focusCall(a);
      return;
    }
    if (t.hasAttribute("data-bulk")) {
      var d = t.getAttribute("data-bulk");
      if (d === "clear") { calls().forEach(function (c) { toggle(c, false); }); } else { bulk(d); }
      return;
    }
    if (t.classList.contains("send-message")) { sendMessage(t.closest(".messagebox")); return; }
    if (t.classList.contains("revoke")) {
      send("revoke", { job: t.getAttribute("data-job"), grant: t.getAttribute("data-grant") })
        .then(function (res) { res.outcomes.forEach(showOutcome); })
        .catch(function (err) { showOutcome({ applied: false, text: "not sent: " + err.message }); });
      return;
    }
    var c = t.closest("article.call");
    if (c && t.hasAttribute("data-decision")) { focusCall(c); answer([answerFor(c, t.getAttribute("data-decision"))]); }
  });
  document.addEventListener("change", function (e) {
    var c = e.target.closest && e.target.closest("article.call");
    if (c && e.target.classList.contains("sel")) toggle(c, e.target.checked);
  });
  document.addEventListener("input", function (e) {
    var c = e.target.closest && e.target.closest("article.call");
    if (c && e.target.classList.contains("reason")) reasons.set(keyOf(c), e.target.value);
    var box = e.target.closest && e.target.closest(".messagebox");
    if (box && e.target.classList.contains("message-text")) drafts.set(box.getAttribute("data-job"), e.target.value);
  });

  var keys = {
    j: function () { moveFocus(1); }, ArrowDown: function () { moveFocus(1); },
    k: function () { moveFocus(-1); }, ArrowUp: function () { moveFocus(-1); },
    x: function (c) { if (c) toggle(c); }, " ": function (c) { if (c) toggle(c); },
    "*": function () { calls().forEach(function (c) { toggle(c, true); }); },
    a: function (c) { if (selected.size) bulk("allow"); else if (c) answer([answerFor(c, "allow")]); },
    d: function (c) { if (selected.size) bulk("deny"); else if (c) answer([answerFor(c, "deny")]); },
    A: function (c) { if (c && $(".always", c)) answer([answerFor(c, "always")]); },
    N: function (c) { if (c && $(".never", c)) answer([answerFor(c, "never")]); },
    g: function (c) { if (c && $(".grant", c)) answer([answerFor(c, "grant")]); },
    r: function (c) { if (c) $(".reason", c).focus(); },
    Escape: function () { calls().forEach(function (c) { toggle(c, false); }); }
  };
  document.addEventListener("keydown", function (e) {
    var t = e.target;
    if (t.tagName === "INPUT" || t.tagName === "SELECT" || t.tagName === "TEXTAREA") {
      if (e.key === "Escape") t.blur();
      if (e.key === "Enter" && t.classList.contains("reason")) { var c0 = t.closest("article.call"); answer([answerFor(c0, "deny")]); }
      if (e.key === "Enter" && (e.ctrlKey || e.metaKey) && t.classList.contains("message-text")) { e.preventDefault(); sendMessage(t.closest(".messagebox")); }
      return;
    }
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    var f = keys[e.key];
    if (!f) return;
    e.preventDefault();
    if (!focusKey && calls().length && e.key !== "Escape" && e.key !== "*") moveFocus(1);
    f(focusKey && byKey(focusKey));
  });

  // For tests and for a person who wants the page to hold still: stop
  // following the server (the page goes stale; its answers still say
  // whether they counted).
  window.custosInbox = {
    stop: function () { stopped = true; if (stream) stream.close(); setLive("paused", "warn"); },
    selected: function () { return Array.from(selected); }
  };
  restore();
  connect();
})();
