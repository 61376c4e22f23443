// The ledger dashboard: polls GET /v1/status once a second and draws it;
// its forms use the API's balance, transaction and ops routes. It talks to
// this server only, and keeps the token in memory (see dashboard.go).
"use strict";

const HISTORY = 300; // samples kept for the charts: 5 minutes at one a second
let token = "";
let prev = null; // the previous status, for rates
let timer = 0;
let watched = null; // the account last looked up, refreshed as commits land
let recentWatched = null; // the account whose recent transfers are shown, likewise
const tput = [], lat = [];

const $ = (id) => document.getElementById(id);
const fmt = (n) => Number(n).toLocaleString("en-US");

function setText(id, v) { $(id).textContent = v; }

function showError(el, msg) { el.className = "out err"; el.textContent = msg; }
function showOut(el, msg) { el.className = "out"; el.textContent = msg; }

async function api(method, path, body) {
  const headers = {};
  if (token) headers["Authorization"] = "Bearer " + token;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const r = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" });
  let j = null;
  try { j = await r.json(); } catch (e) { j = null; }
  if (!r.ok) {
    const err = new Error((j && j.error) || (r.status + " " + r.statusText));
    err.status = r.status;
    throw err;
  }
  return j;
}

function push(arr, v) { arr.push(v); if (arr.length > HISTORY) arr.shift(); }

// draw plots the non-null values of arr into the SVG el, scaled to their
// maximum, newest at the right edge.
function draw(el, arr) {
  let max = 0, n = 0, pts = [];
  for (const v of arr) if (v !== null && v > max) max = v;
  const scale = max > 0 ? 95 / max : 0;
  const x0 = 300 - (arr.length - 1) * (300 / (HISTORY - 1));
  arr.forEach((v, i) => {
    if (v === null) return;
    const x = x0 + i * (300 / (HISTORY - 1)), y = 100 - v * scale;
    pts.push(x.toFixed(1) + "," + y.toFixed(1));
    n++;
  });
  let line = el.querySelector("polyline");
  if (!line) {
    line = document.createElementNS("http://www.w3.org/2000/svg", "polyline");
    el.appendChild(line);
  }
  line.setAttribute("points", pts.join(" "));
  el.dataset.points = String(n);
  return max;
}

// p99 returns the upper bound, in ms, of the bucket holding the 99th
// percentile of the syncs between two polls' histograms, or null if none.
function p99(h, ph) {
  const d = h.counts.map((c, i) => c - (ph ? ph.counts[i] : 0));
  const n = d.reduce((a, b) => a + b, 0);
  if (n <= 0) return null;
  let seen = 0;
  for (let i = 0; i < d.length; i++) {
    seen += d[i];
    if (seen >= 0.99 * n) return (h.first_ns * 2 ** Math.min(i, d.length - 2)) / 1e6;
  }
  return null;
}

// renderStages keeps one row per pipeline stage: parked or awake, and its
// parks and yields per second since the previous poll.
function renderStages(s, dt) {
  const tb = $("stages").tBodies[0];
  const per = s.pressure.per_stage || [];
  if (tb.rows.length !== per.length) {
    tb.textContent = "";
    for (const st of per) {
      const tr = tb.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = st.name;
      tr.appendChild(th);
      for (const k of ["state", "parks", "yields"]) tr.insertCell().id = "stage-" + st.name + "-" + k;
    }
  }
  const before = prev && prev.pressure.per_stage ? prev.pressure.per_stage : [];
  per.forEach((st, i) => {
    const p = before[i] && before[i].name === st.name ? before[i] : null;
    const r = (v, q) => (p && dt > 0 ? fmt(Math.round((v - q) / dt)) : "–");
    setText("stage-" + st.name + "-state", st.parked ? "parked" : "awake");
    setText("stage-" + st.name + "-parks", r(st.parks, p && p.parks));
    setText("stage-" + st.name + "-yields", r(st.yields, p && p.yields));
  });
}

function render(s) {
  const x = s.indexes;
  for (const k of ["sequenced", "computed", "committed", "snapshot"]) setText("idx-" + k, fmt(x[k]));
  setText("lag-computed", fmt(x.sequenced - x.computed));
  setText("lag-committed", fmt(x.computed - x.committed));
  setText("lag-snapshot", fmt(x.committed - x.snapshot));
  setText("state", (s.failed ? "FAILED" : s.closed ? "closed" : "up") + " · updated " + new Date(s.time_ms).toLocaleTimeString());

  if (prev) {
    const dt = (s.time_ms - prev.time_ms) / 1000;
    const db = s.wal.batches - prev.wal.batches;
    const rate = (v, p) => (dt > 0 ? (v - p) / dt : 0);
    push(tput, rate(s.committed, prev.committed));
    push(lat, p99(s.wal.sync_hist, prev.wal.sync_hist));
    const t = tput[tput.length - 1], l = lat[lat.length - 1];
    setText("tput-now", fmt(Math.round(t)));
    setText("tput-max", fmt(Math.round(draw($("chart-tput"), tput))));
    setText("lat-now", l === null ? "idle" : l.toFixed(3) + " ms");
    setText("lat-max", draw($("chart-lat"), lat).toFixed(3));
    setText("lat-mean", db > 0 ? ((s.wal.sync_ns - prev.wal.sync_ns) / db / 1e6).toFixed(3) + " ms" : "idle");
    setText("group-now", db > 0 ? ((s.committed - prev.committed) / db).toFixed(1) : "–");
    setText("p-parks", fmt(Math.round(rate(s.pressure.parks, prev.pressure.parks))));
    setText("p-yields", fmt(Math.round(rate(s.pressure.yields, prev.pressure.yields))));
  }

  const tb = $("outcomes");
  if (tb.rows.length !== s.outcomes.length) {
    tb.textContent = "";
    for (const o of s.outcomes) {
      const tr = tb.insertRow();
      const th = document.createElement("th");
      th.scope = "row";
      th.textContent = o.name.replaceAll("_", " ");
      tr.appendChild(th);
      tr.insertCell().id = "outcome-" + o.name;
    }
  }
  for (const o of s.outcomes) setText("outcome-" + o.name, fmt(o.count));

  setText("wal-batches", fmt(s.wal.batches));
  setText("wal-bytes", fmt(s.wal.bytes));
  setText("wal-sync", s.wal.batches > 0 ? (s.wal.sync_ns / s.wal.batches / 1e6).toFixed(3) + " ms" : "–");
  setText("snapshots", fmt(s.snapshots));
  setText("snapshot-tx", s.snapshot_tx ? fmt(s.snapshot_tx) : "none");
  setText("p-level", s.pressure.level);
  setText("p-stages", s.pressure.stages + " (" + s.pressure.spinning + ")");
  setText("conns", s.server.conns + ", " + s.server.http_conns);
  renderStages(s, prev ? (s.time_ms - prev.time_ms) / 1000 : 0);

  if (!prev || prev.history_index !== s.history_index) renderHistoryIndex(s.history_index);
  if (!prev || prev.indexes.committed !== x.committed) {
    if (watched !== null) lookupBalance(watched);
    if (recentWatched !== null) recentTransfers(recentWatched);
  }
  prev = s;
}

let inflight = false, again = false;

// poll fetches and draws the status, then schedules itself; a call while a
// fetch is in flight runs once more after it instead of starting a second loop.
async function poll() {
  clearTimeout(timer);
  if (inflight) { again = true; return; }
  inflight = true;
  let denied = false;
  try {
    render(await api("GET", "/v1/status"));
  } catch (e) {
    denied = e.status === 401 || e.status === 403;
    setText("state", denied ? "unauthorized: enter a token" : "unreachable: " + e.message);
  }
  inflight = false;
  if (again) { again = false; poll(); return; }
  if (!denied) timer = setTimeout(poll, 1000); // denied: wait for a token, don't fill the server's log
}

async function lookupBalance(id) {
  const out = $("balance-out");
  try {
    const b = await api("GET", "/v1/accounts/" + id + "/balance");
    showOut(out, "account " + b.account + ": balance " + fmt(b.balance));
    out.dataset.balance = String(b.balance);
  } catch (e) {
    showError(out, "account " + id + ": " + e.message);
    delete out.dataset.balance;
  }
}

// recentTransfers shows the account's ten newest transfers from its
// history (GET /v1/accounts/{id}/transfers), each with its change to the
// account's posted balance and the balance after it.
async function recentTransfers(id) {
  const out = $("recent-out"), body = $("recent").tBodies[0];
  try {
    // Ask the account first: one without history is told so without a
    // refused request (which the browser would log as an error).
    const a = await api("GET", "/v1/accounts/" + id);
    if (!a.flags.includes("history")) throw new Error("keeps no history (created without the history flag)");
    const p = await api("GET", "/v1/accounts/" + id + "/transfers?limit=10&debits=true&credits=true&reverse=true");
    body.replaceChildren();
    for (const t of p.transfers) {
      let delta = 0;
      for (const e of t.entries) {
        if (e.account !== id) continue;
        if (e.column === "credits_posted") delta += e.delta;
        if (e.column === "debits_posted") delta -= e.delta;
      }
      const tr = document.createElement("tr");
      for (const v of [String(t.id), t.kind, (delta >= 0 ? "+" : "") + fmt(delta), fmt(t.balance.credits_posted - t.balance.debits_posted)]) {
        const td = document.createElement(tr.children.length === 0 ? "th" : "td");
        if (tr.children.length === 0) td.scope = "row";
        td.textContent = v;
        tr.append(td);
      }
      body.append(tr);
    }
    showOut(out, "account " + id + ": " + p.transfers.length + " shown, as of tx " + fmt(p.as_of) + " (committed " + fmt(p.committed) + ")");
    out.dataset.asOf = String(p.as_of);
  } catch (e) {
    body.replaceChildren();
    showError(out, "account " + id + ": " + e.message);
    delete out.dataset.asOf;
  }
}

// renderHistoryIndex enables the recent transfers panel when the ledger
// keeps the history index, and says so when it does not (its reads would
// be refused with index_off).
function renderHistoryIndex(on) {
  const out = $("recent-out");
  for (const el of $("recent-form").elements) el.disabled = !on;
  if (on) {
    if (out.dataset.off) { showOut(out, ""); delete out.dataset.off; }
    return;
  }
  recentWatched = null;
  $("recent").tBodies[0].replaceChildren();
  delete out.dataset.asOf;
  showOut(out, "The history index is off: start the server with --index to see recent transfers.");
  out.dataset.off = "1";
}

function describe(r) {
  let s = "tx " + r.id + " " + r.kind + ": " + r.fail.replaceAll("_", " ");
  if (r.dup_of) s += " (of tx " + r.dup_of + ")";
  for (const e of r.entries || []) s += "\n  account " + e.account + ": " + e.column + " " + (e.delta >= 0 ? "+" : "") + fmt(e.delta) + " → " + fmt(e.value);
  return s;
}

function uint(id) {
  const v = $(id).value.trim();
  if (!/^[0-9]+$/.test(v)) throw new Error($(id).labels[0].textContent.toLowerCase() + ": want a whole number");
  return Number(v);
}

function opFields() {
  const t = $("op-type").value, transfer = t === "transfer";
  $("op-from-label").textContent = transfer ? "From" : "Account";
  $("op-to").hidden = $("op-to-label").hidden = !transfer;
  $("op-to").required = transfer;
}

function init() {
  const m = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (m) {
    token = decodeURIComponent(m[1]);
    history.replaceState(null, "", location.pathname + location.search);
  }
  $("token-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    token = $("token").value.trim();
    $("token").value = "";
    poll();
  });
  $("balance-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    try { watched = uint("balance-account"); lookupBalance(watched); } catch (e) { showError($("balance-out"), e.message); }
  });
  $("recent-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    try { recentWatched = uint("recent-account"); recentTransfers(recentWatched); } catch (e) { showError($("recent-out"), e.message); }
  });
  $("tx-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const out = $("tx-out");
    try {
      const r = await api("GET", "/v1/tx/" + uint("tx-id"));
      showOut(out, r.result ? describe(r.result) + "\nstatus: " + r.status : "tx " + r.id + ": " + r.status);
    } catch (e) { showError(out, e.message); }
  });
  $("op-type").addEventListener("change", opFields);
  $("op-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const out = $("op-out");
    try {
      const type = $("op-type").value;
      const op = { type, amount: uint("op-amount") };
      if (type === "transfer") { op.from = uint("op-from"); op.to = uint("op-to"); } else op.account = uint("op-from");
      showOut(out, "submitting…");
      const r = await api("POST", "/v1/ops?wait=committed", op);
      showOut(out, describe(r));
      out.dataset.tx = String(r.id);
      poll();
    } catch (e) { showError(out, e.message); }
  });
  opFields();
  poll();
}

init();
