/**
 * The console's only script and stylesheet, served from /static (the CSP allows nothing inline).
 * The script keeps the approvals queue live: on each `approvals` server-sent event it fetches the
 * page again and adds new requests and removes decided ones, leaving the ones on screen (and any
 * reason being typed) as they are. It never builds markup from data itself.
 */
export const CONSOLE_JS = `"use strict";
(function () {
  var queue = document.getElementById("queue");
  if (!queue || typeof EventSource === "undefined") return;
  var status = document.getElementById("live");
  var busy = false, again = false;
  function refresh() {
    if (busy) { again = true; return; }
    busy = true;
    fetch("/approvals", { credentials: "same-origin", headers: { accept: "text/html" } })
      .then(function (r) { if (!r.ok) throw new Error(String(r.status)); return r.text(); })
      .then(function (text) {
        var fresh = new DOMParser().parseFromString(text, "text/html").getElementById("queue");
        if (!fresh) return;
        var wanted = {};
        Array.prototype.forEach.call(fresh.querySelectorAll("article[data-request-id]"), function (a) { wanted[a.getAttribute("data-request-id")] = a; });
        Array.prototype.forEach.call(queue.querySelectorAll("article[data-request-id]"), function (a) {
          var id = a.getAttribute("data-request-id");
          var next = wanted[id];
          if (!next) a.remove();
          else {
            if (next.getAttribute("data-approvals") !== a.getAttribute("data-approvals") || next.getAttribute("data-version") !== a.getAttribute("data-version")) a.replaceWith(document.importNode(next, true));
            delete wanted[id];
          }
        });
        Object.keys(wanted).forEach(function (id) { queue.appendChild(document.importNode(wanted[id], true)); });
        var empty = queue.querySelector(".empty");
        var count = queue.querySelectorAll("article[data-request-id]").length;
        if (empty) empty.hidden = count > 0;
        var counter = document.getElementById("pending-count");
        if (counter) counter.textContent = String(count);
      })
      .catch(function () { if (status) status.textContent = "offline: reload the page"; })
      .then(function () { busy = false; if (again) { again = false; refresh(); } });
  }
  var source = new EventSource("/events");
  source.addEventListener("approvals", refresh);
  source.addEventListener("open", function () { if (status) status.textContent = "live"; });
  source.addEventListener("error", function () { if (status) status.textContent = "reconnecting"; });
})();
`;

export const CONSOLE_CSS = `:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; }
nav { display: flex; gap: 1rem; align-items: center; padding: .6rem 1rem; border-bottom: 1px solid #8886; flex-wrap: wrap; }
nav .brand { font-weight: 700; }
nav a[aria-current] { font-weight: 700; text-decoration: none; }
nav .who { margin-left: auto; opacity: .8; }
nav form { display: inline; }
main { padding: 1rem; max-width: 70rem; }
article.request { border: 1px solid #8886; border-radius: 6px; padding: .8rem 1rem; margin: 1rem 0; }
article.request header h2 { font-size: 1.1rem; margin: 0 0 .3rem; }
.meta { opacity: .8; font-size: .9rem; margin: 0; }
.preview .summary { font-weight: 600; }
dl.facts { display: grid; grid-template-columns: max-content 1fr; gap: .2rem .8rem; margin: .3rem 0; }
dl.facts dt { font-weight: 600; }
dl.facts dd { margin: 0; }
ol.list { margin: 0; padding-left: 1.4rem; }
pre { overflow: auto; padding: .6rem; border: 1px solid #8884; max-height: 30rem; }
pre.diff .add { background: #2a62; } pre.diff .del { background: #d332; } pre.diff .hunk, pre.diff .file { opacity: .7; }
.hidden-char { background: #fc0; color: #000; font-size: .8em; padding: 0 .2em; }
.none { opacity: .6; font-style: italic; }
.decide { display: flex; gap: 1rem; flex-wrap: wrap; margin-top: .6rem; }
.decide form { display: flex; gap: .4rem; align-items: center; }
.notice { padding: .5rem .8rem; border-left: 4px solid #38c; background: #38c2; }
.error, .fail { border-left: 4px solid #d33; background: #d332; padding: .5rem .8rem; }
.ok { border-left: 4px solid #2a6; background: #2a62; padding: .5rem .8rem; }
table { border-collapse: collapse; width: 100%; font-size: .9rem; }
th, td { text-align: left; padding: .3rem .5rem; border-bottom: 1px solid #8884; vertical-align: top; }
form.filters { display: flex; gap: .5rem; flex-wrap: wrap; align-items: end; margin-bottom: 1rem; }
form.filters label { display: flex; flex-direction: column; font-size: .85rem; }
.edited { font-weight: 600; }
table.changes li.del { background: #d332; text-decoration: line-through; } table.changes li.add { background: #2a62; }
form.edit .field { margin: .6rem 0; } form.edit .field label { display: block; margin-bottom: .2rem; }
form.edit textarea { width: 100%; font-family: ui-monospace, monospace; box-sizing: border-box; }
.kind { opacity: .7; font-size: .85rem; }
.provenance-badge { font-size: .75rem; font-weight: 600; padding: .1rem .4rem; border-radius: 4px; border: 1px solid #8886; vertical-align: middle; }
.provenance-badge.violation { background: #d33; color: #fff; } .provenance-badge.untrusted, .provenance-badge.new { background: #fc03; } .provenance-badge.trusted { background: #2a62; }
section.provenance { margin: .6rem 0; } section.provenance h3 { font-size: 1rem; margin: .4rem 0; }
.provenance-warning { border: 2px solid #d33; border-left-width: 6px; background: #d332; padding: .5rem .8rem; }
table.provenance-fields ul { margin: 0; padding-left: 1rem; } table.provenance-fields tr.untrusted .label { color: #d33; font-weight: 600; }
`;
