// roundledger web UI: plain JavaScript over the /v1 API, no build step.
// The token is entered once and kept in sessionStorage (this tab only). Every view shows
// a loading state, an empty state and errors in words. The live feed (GET /v1/feed,
// server-sent events) is read with fetch() and a stream reader rather than EventSource,
// because EventSource cannot send the Authorization header, and a token in the URL would
// end up in the audit log and proxy logs.
"use strict";

const TOKEN_KEY = "roundledger.token";
const PAGE = 50;
const $ = (sel, el = document) => el.querySelector(sel);
// `page` is the page shown now: its generation and, on a round's page, its table and round.
const state = { who: null, steps: null, k: 0, detail: null, tz: "UTC", gen: 0, page: { gen: 0 } };

function token() { return sessionStorage.getItem(TOKEN_KEY); }

// ---------- pages ----------
// Every page the user opens gets a new generation (state.gen): route() and sign-out bump
// it. api() notes the generation it was called in; an answer that arrives after the user
// moved on never settles, so nothing after it runs and nothing of it reaches the page
// shown now. This one guard covers every asynchronous answer; pages do not check it.
// Calls that belong to no page (whoami at sign-in) pass { global: true }.
function api(path, opts = {}) {
  const gen = state.gen;
  const stale = () => !opts.global && gen !== state.gen;
  const never = new Promise(() => {});
  return request(path, opts).then(v => stale() ? never : v, e => stale() ? never : Promise.reject(e));
}

async function request(path, opts) {
  const headers = Object.assign({ Authorization: "Bearer " + token() }, opts.headers || {});
  if (opts.body) headers["Content-Type"] = "application/json";
  let res;
  try {
    res = await fetch(path, Object.assign({}, opts, { headers }));
  } catch (e) {
    throw new Error("The server cannot be reached (" + e.message + "). Is roundledger serve running?");
  }
  if (res.status === 401) {
    const msg = "Your token was not accepted. Please sign in again.";
    signOut(msg); throw new Error(msg);
  }
  if (!res.ok) {
    let msg = res.status + " " + res.statusText;
    try { const b = await res.json(); if (b.error) msg = b.error; } catch (_) {}
    if (res.status === 403) msg = "Your role may not see this: " + msg;
    throw new Error(msg);
  }
  return opts.raw ? res : res.json();
}

function esc(s) {
  return String(s == null ? "" : s).replace(/[&<>"']/g, c => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" }[c]));
}
function money(m) {
  if (m == null) return "";
  const v = Number(m) / 100;
  return v.toLocaleString("en", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
}
function signed(m) { return (m > 0 ? "+" : "") + money(m); }
// ---------- time ----------
// People read times in the property's time zone (whoami's time_zone), to the millisecond:
// surveillance lines events up with CCTV footage on the floor's wall clock.
const formats = new Map();
function wallParts(ms, tz) {
  if (!formats.has(tz)) formats.set(tz, new Intl.DateTimeFormat("en-CA", { timeZone: tz, year: "numeric", month: "2-digit",
    day: "2-digit", hour: "2-digit", minute: "2-digit", second: "2-digit", fractionalSecondDigits: 3, hourCycle: "h23", timeZoneName: "short" }));
  const o = {};
  for (const p of formats.get(tz).formatToParts(new Date(ms))) o[p.type] = p.value;
  return o;
}
function msOf(ns) { return Number(BigInt(ns) / 1000000n); }
// A date and time with milliseconds and the zone: 2026-11-25 14:03:07.123 GMT+8.
function time(ns) {
  if (ns == null) return "";
  const p = wallParts(msOf(ns), state.tz);
  return `${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}.${p.fractionalSecond} ${p.timeZoneName}`;
}
// An event's time on the surveillance recorder's clock (serve --recorder-offset-ms), as
// " · recorder 14:03:09.623"; empty when no offset is set.
function recorder(ns) {
  if (ns == null || state.recorderMs == null) return "";
  const p = wallParts(msOf(ns) + state.recorderMs, state.tz);
  return ` · recorder ${p.hour}:${p.minute}:${p.second}.${p.fractionalSecond}`;
}
// The time of day only: 14:03:07.123.
function clock(ns) {
  const p = wallParts(msOf(ns), state.tz);
  return `${p.hour}:${p.minute}:${p.second}.${p.fractionalSecond}`;
}
// A wall time typed as YYYY-MM-DD HH:MM (or with a T) in the property's zone, as UTC ns. Each pass
// corrects by the zone's offset at the guess; two settle a DST change.
function nsFromInput(v) {
  if (!v) return "";
  const want = Date.parse(v.trim().replace(" ", "T") + ":00Z");
  let t = want;
  for (let i = 0; i < 2; i++) {
    const p = wallParts(t, state.tz);
    t -= Date.UTC(+p.year, +p.month - 1, +p.day, +p.hour, +p.minute, +p.second) - want;
  }
  return String(BigInt(t) * 1000000n);
}
// The property's wall clock in the header, to the second, with its zone: an officer in
// another zone lines it up with the CCTV recorder's clock. It ticks on each whole second.
let clockTimer = null;
function startClock() {
  const el = $("#clock");
  const tick = () => {
    const p = wallParts(Date.now(), state.tz);
    el.innerHTML = `<span class="clock-time">${p.year}-${p.month}-${p.day} ${p.hour}:${p.minute}:${p.second}</span> <span class="muted">${esc(p.timeZoneName)} · ${esc(state.tz)}</span>`;
    clockTimer = setTimeout(tick, 1000 - (Date.now() % 1000) + 5);
  };
  clearTimeout(clockTimer);
  el.hidden = false;
  tick();
}
function stopClock() { clearTimeout(clockTimer); clockTimer = null; $("#clock").hidden = true; }
function zoneLabel() { return `local time, ${esc(state.tz)}`; }
function badge(v) { return `<span class="badge ${esc(v)}">${esc(v)}</span>`; }
// A round's verdict, or "in progress" while it is being played (nothing decided yet).
function verdictBadge(r) { return r.in_progress ? `<span class="badge in_progress">in progress</span>` : badge(r.verdict); }
function toast(msg) { const t = $("#toast"); t.textContent = msg; t.classList.add("show"); setTimeout(() => t.classList.remove("show"), 2500); }
function loading(el, what) { el.innerHTML = `<div class="card"><p class="muted">Loading ${esc(what)}…</p></div>`; }
function failed(el, e) { el.innerHTML = `<div class="card"><h2>Something went wrong</h2><p class="error" role="alert">${esc(e.message)}</p></div>`; }

const SUITS = { c: ["♣", false], d: ["♦", true], h: ["♥", true], s: ["♠", false] };
function cardHtml(c, isNew) {
  const rank = c[0] === "T" ? "10" : c[0];
  const [sym, red] = SUITS[c[1]] || ["?", false];
  return `<span class="pcard${red ? " red" : ""}${isNew ? " new" : ""}" title="${esc(c)}"><span>${esc(rank)}</span><span class="s">${sym}</span></span>`;
}
function handHtml(cards, prev) {
  const n = (prev || []).length;
  return `<div class="hand">${(cards || []).map((c, i) => cardHtml(c, i >= n)).join("") || '<span class="muted on-felt">—</span>'}</div>`;
}
function stakeText(s) {
  if (s == null) return "";
  if (typeof s === "number") return money(s);
  if (s.chips != null) return money(s.chips);
  if (s.credits != null) return s.credits + " credits";
  return JSON.stringify(s);
}

// ---------- sign in ----------
function signOut(msg) {
  sessionStorage.removeItem(TOKEN_KEY);
  state.who = null; state.gen++;
  stopFeed(); stopClock();
  showLogin(msg);
}
function showLogin(msg) {
  $("#nav").hidden = true; $("#who").innerHTML = ""; $("#view").innerHTML = "";
  $("#login").hidden = false; $("#login-error").textContent = msg || "";
  $("#token").focus();
}
$("#login-form").addEventListener("submit", async ev => {
  ev.preventDefault();
  sessionStorage.setItem(TOKEN_KEY, $("#token").value.trim());
  try { await start(); } catch (e) { $("#login-error").textContent = e.message; }
});

const ROLE_AREAS = { surveillance: ["rounds", "tables"], finance: ["tables", "finance"], admin: ["rounds", "tables", "finance", "audit"] };

async function start() {
  if (!token()) return showLogin();
  const who = await api("/v1/whoami", { global: true });
  state.who = who; state.tz = who.time_zone || "UTC"; state.gamingDay = who.gaming_day || null;
  state.recorderMs = Number.isInteger(who.recorder_offset_ms) ? who.recorder_offset_ms : null;
  $("#login").hidden = true; $("#token").value = "";
  $("#who").innerHTML = `Signed in as <b>${esc(who.name)}</b> (${esc(who.role)}) <button class="secondary" id="signout">Sign out</button>`;
  $("#signout").onclick = () => signOut("Signed out.");
  startClock();
  const areas = ROLE_AREAS[who.role] || [];
  document.querySelectorAll("#nav a").forEach(a => { a.hidden = !areas.includes(a.dataset.area); });
  $("#nav").hidden = false;
  // The feed is the surveillance room's: the roles that may read rounds subscribe.
  if (areas.includes("rounds")) startFeed();
  // Setting the hash routes (hashchange); routing here too would load the page twice.
  if (!location.hash || location.hash === "#") location.hash = areas.includes("rounds") ? "#/disputes" : "#/finance";
  else route();
}

// ---------- live feed ----------
// One subscription per signed-in tab, kept while other pages are open (the nav shows how
// many rounds changed since the Live page was last seen); reconnects after a drop.
const LIVE_MAX = 200;
const live = { rounds: new Map(), ctrl: null, status: "off", unseen: 0, lagged: 0, gen: 0 };

function startFeed() {
  stopFeed();
  live.rounds.clear(); live.unseen = 0; live.lagged = 0;
  const gen = ++live.gen;
  feedLoop(gen);
}
function stopFeed() {
  live.gen++;
  if (live.ctrl) live.ctrl.abort();
  live.ctrl = null;
  setLiveStatus("off");
}
function setLiveStatus(s) {
  live.status = s;
  const el = $("#live-status");
  if (el) { el.className = "live-status " + s; el.textContent = { live: "● live", "read-only": "connected; this server does not ingest, so nothing new arrives", connecting: "connecting…", reconnecting: "connection lost, reconnecting…", off: "not connected" }[s] || s; }
}
async function feedLoop(gen) {
  while (gen === live.gen) {
    const ctrl = new AbortController();
    live.ctrl = ctrl;
    setLiveStatus(live.status === "off" ? "connecting" : "reconnecting");
    try {
      const res = await fetch("/v1/feed", { headers: { Authorization: "Bearer " + token(), Accept: "text/event-stream" }, signal: ctrl.signal });
      if (res.status === 401) { if (gen === live.gen) signOut("Your token was not accepted. Please sign in again."); return; }
      if (res.status === 403) { setLiveStatus("your role may not read the live feed"); return; }
      if (!res.ok || !res.body) throw new Error("feed: " + res.status);
      // A read-only server (serve --no-ingest) stores nothing new: connected, not live.
      setLiveStatus(state.who && state.who.ingesting === false ? "read-only" : "live");
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buf += value.replace(/\r\n?/g, "\n");
        let i;
        while ((i = buf.indexOf("\n\n")) >= 0) { onFeedMessage(buf.slice(0, i)); buf = buf.slice(i + 2); }
      }
    } catch (e) {
      if (ctrl.signal.aborted || gen !== live.gen) return;
    }
    if (gen !== live.gen) return;
    setLiveStatus("reconnecting");
    await new Promise(r => setTimeout(r, 2000));
  }
}
function onFeedMessage(block) {
  let event = "message"; const data = [];
  for (const line of block.split("\n")) {
    if (line.startsWith(":")) continue;
    const c = line.indexOf(":"); const field = c < 0 ? line : line.slice(0, c);
    const value = c < 0 ? "" : line.slice(c + 1).replace(/^ /, "");
    if (field === "event") event = value; else if (field === "data") data.push(value);
  }
  if (event === "lagged") { live.lagged += Number(data.join("")) || 0; return renderLiveSoon(); }
  if (event !== "round" && event !== "finding") return;
  let item; try { item = JSON.parse(data.join("\n")); } catch (_) { return; }
  const r = item.round || item.finding;
  const key = r.table + "/" + r.round;
  const e = live.rounds.get(key) || { row: null, findings: [], next: [] };
  live.rounds.delete(key);
  // A round's findings come just before the round itself: they replace the earlier ones.
  if (item.kind === "finding") e.next.push(item.finding);
  else { e.row = item.round; e.findings = e.next; e.next = []; e.at = Date.now(); live.unseen++; }
  live.rounds.set(key, e);
  while (live.rounds.size > LIVE_MAX) live.rounds.delete(live.rounds.keys().next().value);
  renderLiveSoon();
}
let liveTimer = null;
function renderLiveSoon() { if (!liveTimer) liveTimer = setTimeout(() => { liveTimer = null; renderLive(); }, 100); }
function renderLive() {
  const list = $("#live-list");
  if (list) live.unseen = 0;
  const count = $("#live-count");
  if (count) { count.hidden = !live.unseen; count.textContent = live.unseen > 99 ? "99+" : String(live.unseen); }
  if (!list) return;
  const entries = [...live.rounds.values()].filter(e => e.row).reverse();
  $("#live-lagged").textContent = live.lagged ? `This page fell behind and missed ${live.lagged} messages; the lists have everything.` : "";
  list.innerHTML = entries.length ? entries.map(e => { const r = e.row; return `<li class="live-item clickable${r.in_progress ? " playing" : ""}" data-href="#/round/${encodeURIComponent(r.table)}/${r.round}">
      <span class="when">${time(r.opened_at_ns)}</span><span class="what"><b>${esc(r.table)}</b> · round ${r.round}</span>${verdictBadge(r)}
      <span class="muted">${r.in_progress ? "being played" : `${r.disputes} disputed lines · ${r.findings} findings${r.disputes ? " · recorded − rules " + signed(r.difference) : ""}`}</span>
      ${e.findings.length ? `<div class="live-findings">${e.findings.map(f => `${badge(f.severity)} <code>${esc(f.code)}</code> ${esc(f.explanation)}`).join("<br>")}</div>` : ""}</li>`; }).join("")
    : `<li class="empty">Waiting for rounds… New rounds appear here as the tables play them (the lists have the earlier ones).</li>`;
  list.querySelectorAll("li.clickable").forEach(li => li.onclick = () => { location.hash = li.dataset.href; });
}
function liveView(view) {
  view.innerHTML = `<div class="card"><h1>Live</h1>
    <p class="hint">Rounds as the ledger stores them, newest activity first: a round appears when its first event arrives, gets its verdict when it closes, with its findings. Click one to open it.</p>
    <p><span id="live-status" class="live-status"></span> <span class="muted" id="live-lagged"></span></p>
    <ul id="live-list" class="live-list"></ul></div>`;
  setLiveStatus(live.status);
  renderLive();
}

// ---------- routing ----------
window.addEventListener("hashchange", () => { if (state.who) route(); });
function route() {
  const h = location.hash.slice(1);
  const parts = h.split("?")[0].split("/").filter(Boolean).map(decodeURIComponent);
  const q = new URLSearchParams(h.split("?")[1] || "");
  document.querySelectorAll("#nav a").forEach(a => a.classList.toggle("active", h.startsWith(a.getAttribute("href").slice(1))));
  // A new page: answers to the pages before it never settle (api() above).
  state.page = { gen: ++state.gen };
  const view = document.createElement("div");
  $("#view").replaceChildren(view);
  const r = parts[0];
  if (r === "disputes") return disputeQueue(view, q);
  if (r === "live") return liveView(view);
  if (r === "search") return search(view, q);
  if (r === "findings") return findingsView(view, q);
  if (r === "analytics") return analyticsView(view, q);
  if (r === "cases") return casesView(view, q);
  if (r === "tables") return tablesView(view);
  if (r === "finance") return financeView(view, q);
  if (r === "audit") return auditView(view, q);
  if (r === "round" && parts.length >= 3) {
    Object.assign(state.page, { table: parts[1], round: parts[2] });
    return roundView(view, parts[1], parts[2]);
  }
  view.innerHTML = `<div class="card"><p>Nothing here. Choose a page above.</p></div>`;
}

function pager(q, total, base) {
  const off = Number(q.get("offset") || 0);
  const prev = off > 0 ? `<a class="button secondary" href="${base}${base.includes("?") ? "&" : "?"}offset=${Math.max(0, off - PAGE)}">← Newer</a>` : "";
  const next = off + PAGE < total ? `<a class="button secondary" href="${base}${base.includes("?") ? "&" : "?"}offset=${off + PAGE}">Older →</a>` : "";
  return `<div class="pager">${prev}<span class="muted">${total ? off + 1 : 0}–${Math.min(total, off + PAGE)} of ${total}</span>${next}</div>`;
}

// Rounds of the server's list `query` (its headers sort the whole result on the server).
function roundsTable(items, query) {
  return `<table class="list" id="rounds-table" data-list="rounds" data-query="${esc(query.toString())}"><thead><tr><th data-key="table">Table</th><th class="num">Round</th><th data-key="opened_at">Opened</th><th>Dealer</th><th>Verdict</th><th>Boxes</th><th class="num">Disputed lines</th><th class="num" data-key="findings">Findings</th><th class="num" data-key="difference">Recorded − rules</th></tr></thead><tbody>
    ${items.map(r => `<tr class="clickable" data-href="#/round/${encodeURIComponent(r.table)}/${r.round}">
      <td>${esc(r.table)}</td><td class="num">${r.round}</td><td>${time(r.opened_at_ns)}</td><td>${esc(r.dealer || "")}</td><td>${verdictBadge(r)}</td>
      <td>${r.boxes.join(", ")}</td><td class="num">${r.disputes}</td><td class="num">${r.findings}</td><td class="num">${r.disputes ? signed(r.difference) : ""}</td></tr>`).join("")}
    </tbody></table>`;
}
function clickableRows(el) { el.querySelectorAll("tr.clickable").forEach(tr => tr.onclick = () => { location.hash = tr.dataset.href; }); }

// ---------- dispute queue ----------
// One row per disputed settlement line, so the box and the amount are named. Every
// filter, the sort and the CSV are the server's, over the whole result (serverList below).
async function disputeQueue(view, q) {
  loading(view, "the dispute queue");
  const p = new URLSearchParams();
  if (q.get("table")) p.set("table", q.get("table"));
  setWhen(p, q);
  if (q.get("box")) p.set("box", q.get("box"));
  if (q.get("dealer")) p.set("dealer", q.get("dealer"));
  if (q.get("min")) p.set("min_difference_minor", minorOf(q.get("min")));
  if (q.get("amount")) p.set("min_amount_minor", minorOf(q.get("amount")));
  setSort(p, q);
  try {
    const [page, tables] = await Promise.all([api("/v1/disputes?" + withPage(p, q)), api("/v1/tables")]);
    const base = "#/disputes?" + new URLSearchParams([...q].filter(([k]) => k !== "offset"));
    const th = (key, label, num) => `<th${num ? ' class="num"' : ""}${key ? ` data-key="${key}"` : ""}>${label}</th>`;
    view.innerHTML = `<div class="card"><h1>Dispute queue</h1>
      <p class="hint">Settlement lines where what the dealer recorded differs from what the rules say, newest round first. Times in ${zoneLabel()}.</p>
      ${filterForm("queue-form", q, tables, `<div><label for="f-box">Box</label><input id="f-box" name="box" type="number" min="1" max="9" value="${esc(q.get("box") || "")}" placeholder="any"></div>
        <div><label for="f-min">Difference at least</label><input id="f-min" name="min" type="number" min="0" step="0.01" value="${esc(q.get("min") || "")}" placeholder="any"></div>
        <div><label for="f-amount">Amount due at least</label><input id="f-amount" name="amount" type="number" min="0" step="0.01" value="${esc(q.get("amount") || "")}" placeholder="any"></div>`)}
      ${page.items.length ? `<table class="list" id="queue-table" data-list="disputes" data-query="${esc(p.toString())}"><thead><tr>${th("table", "Table")}${th("", "Round", 1)}${th("opened_at", "Opened")}${th("box", "Box", 1)}${th("", "Line")}${th("amount", "Due", 1)}${th("", "Paid", 1)}${th("difference", "Difference", 1)}</tr></thead><tbody>
      ${page.items.map(d => `<tr class="clickable diff" data-href="#/round/${encodeURIComponent(d.table)}/${d.round}"><td>${esc(d.table)}</td><td class="num">${d.round}</td><td>${time(d.opened_at_ns)}</td><td class="num">${d.box}</td><td>${esc(d.line.replace(/_/g, " "))}</td><td class="num">${signed(d.expected)}</td><td class="num">${signed(d.recorded)}</td><td class="num">${signed(d.difference)}</td></tr>`).join("")}
      </tbody></table>` + pager(q, page.total, base) : `<div class="empty">No disputed line matches.</div>`}</div>`;
    bindFilter(view, "queue-form", "#/disputes");
    clickableRows(view);
  } catch (e) { failed(view, e); }
}

// An amount typed in major units ("50", "12.5") as minor units, without floating point.
function minorOf(v) {
  const m = String(v).trim().match(/^(\d+)(?:\.(\d{0,2}))?$/);
  if (!m) return "-1"; // the server refuses it and says why
  return String(BigInt(m[1]) * 100n + BigInt((m[2] || "").padEnd(2, "0")));
}
// The page's sort (`sort`, `order` in the hash) as the API takes it.
function setSort(p, q) {
  if (q.get("sort")) p.set("sort", q.get("sort"));
  if (q.get("order")) p.set("order", q.get("order"));
}
// The query with the page's offset and size.
function withPage(p, q) {
  const w = new URLSearchParams(p);
  w.set("limit", PAGE); w.set("offset", q.get("offset") || 0);
  return w;
}

// The time a filter asks for, as the API takes it: a gaming day (`day`), or one of its
// shifts (`shift=<day>/<n>`), which replaces the From and To times; else From and To.
function setWhen(p, q) {
  const day = q.get("day"), n = q.get("shift");
  if (day && n) return p.set("shift", `${day}/${n}`);
  if (day) return p.set("day", day);
  if (q.get("from")) p.set("from_ns", nsFromInput(q.get("from")));
  if (q.get("to")) p.set("to_ns", nsFromInput(q.get("to")));
}

// A filter form: table, a local time range or a gaming day and shift, plus `extra` fields.
function filterForm(id, q, tables, extra) {
  const v = k => esc(q.get(k) || "");
  return `<form id="${id}" class="form-row">
      <div><label for="${id}-table">Table</label><select id="${id}-table" name="table"><option value="">any table</option>
        ${tables.map(t => `<option ${q.get("table") === t.table ? "selected" : ""}>${esc(t.table)}</option>`).join("")}</select></div>
      <div><label for="${id}-from">From (${zoneLabel()})</label><input id="${id}-from" name="from" type="text" pattern="\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}" placeholder="yyyy-mm-dd hh:mm" title="yyyy-mm-dd hh:mm, as every time on these pages" value="${v("from")}"></div>
      <div><label for="${id}-to">To (${zoneLabel()})</label><input id="${id}-to" name="to" type="text" pattern="\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}" placeholder="yyyy-mm-dd hh:mm" title="yyyy-mm-dd hh:mm, as every time on these pages" value="${v("to")}"></div>
      <div><label for="${id}-day">Gaming day</label><input id="${id}-day" name="day" type="text" pattern="\\d{4}-\\d{2}-\\d{2}" placeholder="yyyy-mm-dd" title="yyyy-mm-dd, as every date on these pages" value="${v("day")}"></div>
      <div><label for="${id}-shift">Shift</label><input id="${id}-shift" name="shift" type="number" min="1" max="8" value="${v("shift")}" placeholder="whole day"></div>
      <div><label for="${id}-dealer">Dealer</label><input id="${id}-dealer" name="dealer" type="text" pattern="[A-Za-z0-9_-]{1,32}" value="${v("dealer")}" placeholder="any"></div>
      ${extra}<div><button type="submit">Show</button></div></form>`;
}
function bindFilter(view, id, base) {
  $("#" + id, view).onsubmit = ev => {
    ev.preventDefault();
    const p = new URLSearchParams();
    for (const [k, val] of new FormData(ev.target)) if (val) p.set(k, val);
    location.hash = base + "?" + p.toString();
  };
}

// ---------- round search ----------
async function search(view, q) {
  let tables = [];
  try { tables = await api("/v1/tables"); } catch (e) { return failed(view, e); }
  const v = k => esc(q.get(k) || "");
  view.innerHTML = `<div class="card"><h1>Round search</h1>
    <p class="hint">Find a round from what the patron says: the table, roughly when (${zoneLabel()}), and the box they played. A gaming day, or a shift of it, replaces From and To.</p>
    <form id="search-form" class="form-row">
      <div><label for="s-table">Table</label><select id="s-table" name="table"><option value="">any table</option>
        ${tables.map(t => `<option ${q.get("table") === t.table ? "selected" : ""}>${esc(t.table)}</option>`).join("")}</select></div>
      <div><label for="s-from">From (${zoneLabel()})</label><input id="s-from" name="from" type="text" pattern="\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}" placeholder="yyyy-mm-dd hh:mm" title="yyyy-mm-dd hh:mm, as every time on these pages" value="${v("from")}"></div>
      <div><label for="s-to">To (${zoneLabel()})</label><input id="s-to" name="to" type="text" pattern="\\d{4}-\\d{2}-\\d{2}[ T]\\d{2}:\\d{2}" placeholder="yyyy-mm-dd hh:mm" title="yyyy-mm-dd hh:mm, as every time on these pages" value="${v("to")}"></div>
      <div><label for="s-day">Gaming day</label><input id="s-day" name="day" type="text" pattern="\\d{4}-\\d{2}-\\d{2}" placeholder="yyyy-mm-dd" title="yyyy-mm-dd, as every date on these pages" value="${v("day")}"></div>
      <div><label for="s-shift">Shift</label><input id="s-shift" name="shift" type="number" min="1" max="8" value="${v("shift")}" placeholder="whole day"></div>
      <div><label for="s-box">Box</label><input id="s-box" name="box" type="number" min="1" max="9" value="${v("box")}" placeholder="any"></div>
      <div><label for="s-dealer">Dealer</label><input id="s-dealer" name="dealer" type="text" pattern="[A-Za-z0-9_-]{1,32}" value="${v("dealer")}" placeholder="any"></div>
      <div><label for="s-verdict">Verdict</label><select id="s-verdict" name="verdict"><option value="">any</option>
        ${["disputed", "irregular", "void", "clean"].map(x => `<option ${q.get("verdict") === x ? "selected" : ""}>${x}</option>`).join("")}</select></div>
      <div><label for="s-min">Difference at least</label><input id="s-min" name="min" type="number" min="0" step="0.01" value="${v("min")}" placeholder="any"></div>
      <div><button type="submit">Search</button></div>
    </form></div><div id="results"></div>`;
  $("#search-form", view).onsubmit = ev => {
    ev.preventDefault();
    const f = new FormData(ev.target); const p = new URLSearchParams();
    for (const [k, val] of f) if (val) p.set(k, val);
    location.hash = "#/search?" + p.toString();
  };
  if (![...q.keys()].length) { $("#results", view).innerHTML = `<div class="card empty">Choose a table, a time or a box and press Search.</div>`; return; }
  const res = $("#results", view); loading(res, "rounds");
  try {
    const p = new URLSearchParams();
    if (q.get("table")) p.set("table", q.get("table"));
    setWhen(p, q);
    if (q.get("box")) p.set("box", q.get("box"));
    if (q.get("verdict")) p.set("verdict", q.get("verdict"));
    if (q.get("dealer")) p.set("dealer", q.get("dealer"));
    if (q.get("min")) p.set("min_difference_minor", minorOf(q.get("min")));
    setSort(p, q);
    const page = await api("/v1/rounds?" + withPage(p, q));
    const base = "#/search?" + new URLSearchParams([...q].filter(([k]) => k !== "offset"));
    res.innerHTML = `<div class="card">${page.items.length ? roundsTable(page.items, p) + pager(q, page.total, base) : `<div class="empty">No round matches. Widen the time range or leave the box empty.</div>`}</div>`;
    clickableRows(res);
  } catch (e) { failed(res, e); }
}

// ---------- findings ----------
async function findingsView(view, q) {
  loading(view, "findings");
  const p = new URLSearchParams();
  for (const k of ["table", "severity", "code", "box", "game", "dealer"]) if (q.get(k)) p.set(k, q.get(k));
  setWhen(p, q);
  setSort(p, q);
  try {
    const [page, tables] = await Promise.all([api("/v1/findings?" + withPage(p, q)), api("/v1/tables")]);
    const base = "#/findings?" + new URLSearchParams([...q].filter(([k]) => k !== "offset"));
    const sev = `<div><label for="fi-severity">Severity</label><select id="fi-severity" name="severity"><option value="">any</option>
      ${["info", "warning", "critical"].map(x => `<option value="${x}" ${q.get("severity") === x ? "selected" : ""}>${x}${x === "critical" ? "" : " and worse"}</option>`).join("")}</select></div>`;
    view.innerHTML = `<div class="card"><h1>Findings</h1><p class="hint">Irregularities found by replaying rounds, each citing the clause of the rule set. Times in ${zoneLabel()}.</p>
      ${filterForm("findings-form", q, tables, `${sev}<div><label for="fi-code">Code</label><input id="fi-code" name="code" value="${esc(q.get("code") || "")}" placeholder="any"></div>
        <div><label for="fi-box">Box</label><input id="fi-box" name="box" type="number" min="1" max="9" value="${esc(q.get("box") || "")}" placeholder="any"></div>`)}
      ${page.items.length ? `<table class="list" id="findings-table" data-list="findings" data-query="${esc(p.toString())}"><thead><tr><th data-key="table">Table</th><th class="num">Round</th><th data-key="opened_at">Opened</th><th data-key="severity">Severity</th><th data-key="code">Code</th><th>What</th></tr></thead><tbody>
      ${page.items.map(f => `<tr class="clickable" data-href="#/round/${encodeURIComponent(f.table)}/${f.round}"><td>${esc(f.table)}</td><td class="num">${f.round}</td><td>${time(f.opened_at_ns)}</td><td>${badge(f.severity)}</td><td><code title="${esc((f.clause_wording || []).join(" … "))}">${esc(f.code)}</code></td><td>${esc(f.explanation)}</td></tr>`).join("")}
      </tbody></table>` + pager(q, page.total, base) : `<div class="empty">No finding matches.</div>`}</div>`;
    bindFilter(view, "findings-form", "#/findings");
    clickableRows(view);
  } catch (e) { failed(view, e); }
}

// ---------- analytics ----------
// The decision signals: each statistic that crossed its threshold, linking to its rounds.
async function analyticsView(view, q) {
  loading(view, "analytics");
  const p = new URLSearchParams();
  for (const k of ["table", "dealer", "kind"]) if (q.get(k)) p.set(k, q.get(k));
  try {
    const a = await api("/v1/analytics?" + p);
    const milli = x => (x / 1000).toFixed(2);
    // A link is /v1/tables/<table>/rounds/<n>: a dealer's rounds may be at other tables.
    const rounds = s => s.round_links.map(l => {
      const parts = l.split("/"), t = decodeURIComponent(parts[3]), n = parts.pop();
      const label = t === s.table ? n : `${esc(t)} ${n}`;
      return `<a href="#/round/${encodeURIComponent(t)}/${n}">${label}</a>`;
    }).join(", ");
    const moved = s => s.moved.map(m => `<li>${m.table ? esc(m.table) + " " : ""}round ${m.round}, box ${m.box_no}: ${esc(m.text)}</li>`).join("");
    const head = `<h1>Analytics</h1><p class="hint">Decisions compared with the computed strategy: hole-card play per box, dealer and table, card sharing per pair of boxes. A dealer whose disputed rounds are improbably many for the floor's rate (Poisson tail under 0.001) raises dealer errors. A closed shift whose hold lies outside its interval raises hold outside (listed above). A signal is a statistic past its threshold${a.false_alarms_milli_per_1000_rounds != null ? `, set for ${milli(a.false_alarms_milli_per_1000_rounds)} false alarms per 1,000 rounds` : ""}.</p>`;
    if (!a.computed) {
      view.innerHTML = `<div class="card">${head}<div class="empty">Not computed: ${esc(a.not_computed_reason || "unknown")}</div></div>${dealersCard(a)}`;
      return;
    }
    view.innerHTML = `${holdsCard(a, rounds)}${dealersCard(a)}<div class="card">${head}
      ${a.signals.length ? `<table class="list" id="analytics-table"><thead><tr><th>Table</th><th>Kind</th><th>Whose</th><th class="num">Round</th><th class="num">Statistic</th><th class="num">Threshold</th><th>Rounds</th></tr></thead><tbody>
      ${a.signals.map(s => `<tr><td>${esc(s.table)}</td><td>${esc(s.kind.replace(/_/g, " "))}</td><td>${esc(s.subject)}</td><td class="num"><a href="#/round/${encodeURIComponent(s.table)}/${s.round}">${s.round}</a></td><td class="num">${milli(s.statistic_milli)}</td><td class="num">${milli(s.threshold_milli)}</td><td>${rounds(s)}<details><summary>what moved it</summary><ul>${moved(s)}</ul></details></td></tr>`).join("")}
      </tbody></table>` : `<div class="empty">No signal: every round was judged and no statistic crossed its threshold.</div>`}</div>`;
  } catch (e) { failed(view, e); }
}

// Closed table shifts whose recorded win lies outside the theoretical win's interval
// (hold_outside), each linking to the shift's finance view and its largest payout errors;
// and the shifts given up unjudged, with the reason.
function holdsCard(a, rounds) {
  const holds = a.signals.filter(s => s.hold);
  const gone = a.holds_not_judged || [];
  const notJudged = gone.length ? `<p class="hint" id="holds-not-judged">${a.holds_not_judged_total} closed shifts not judged. ${gone.map(g => `${esc(g.table)} ${esc(g.shift || "(shift unknown)")}: ${esc(g.reason)}`).join("; ")}.</p>` : "";
  if (!holds.length) return notJudged ? `<div class="card"><h2>Hold outside its interval</h2>${notJudged}</div>` : "";
  const finance = (s, h) => {
    const [day, n] = h.shift.split("/");
    return `#/finance?span=shift&day=${encodeURIComponent(day)}&n=${encodeURIComponent(n || "1")}&table=${encodeURIComponent(s.table)}`;
  };
  return `<div class="card"><h2>Hold outside its interval</h2><p class="hint">A closed shift's recorded win against its theoretical win, plus or minus 3.29 standard deviations from the handle and each bet's variance. An honest shift lies outside about 1 time in 1,000.</p>
    <table class="list" id="holds-table"><thead><tr><th>Table</th><th>Shift</th><th class="num">Rounds</th><th class="num">Won</th><th class="num">Theoretical</th><th class="num">Interval</th><th class="num">Handle</th><th>Rounds to open</th></tr></thead><tbody>
    ${holds.map(s => { const h = s.hold; return `<tr><td>${esc(s.table)}</td><td><a href="${finance(s, h)}">${esc(h.shift)}</a></td><td class="num">${h.rounds}</td><td class="num">${money(h.actual_win)}</td><td class="num">${money(h.theoretical_win)}</td><td class="num">${money(h.win_low)} to ${money(h.win_high)}</td><td class="num">${money(h.handle_priced)}</td><td>${rounds(s)}</td></tr>`; }).join("")}
    </tbody></table>${notJudged}</div>`;
}

// Each dealer's quality per 1,000 rounds against the floor's median, their rounds per hour
// of dealing against the floor's quartiles, and their dealer errors alarm; a cut list says so.
function dealersCard(a) {
  if (!a.dealers.length) return "";
  const one = x => x == null ? "—" : (x / 1000).toFixed(1);
  const rate = r => r.milli_per_1000_rounds == null ? "—" : `${one(r.milli_per_1000_rounds)} <span class="hint">(floor ${one(r.floor_median_milli_per_1000_rounds)})</span>`;
  const pace = p => p.rounds_per_hour_milli == null ? `<span class="pace-null" title="${esc(p.null_reason || "")}">—</span>`
    : `${one(p.rounds_per_hour_milli)} <span class="hint">(floor ${one(p.floor_p25_milli)}–${one(p.floor_median_milli)}–${one(p.floor_p75_milli)})</span>`;
  const alarms = new Map(a.signals.filter(s => s.kind === "dealer_errors" && s.dealer).map(s => [s.dealer, s]));
  const alarm = d => {
    const s = alarms.get(d.dealer);
    return s ? `<a class="dealer-alarm" href="#/round/${encodeURIComponent(s.table)}/${s.round}">${esc(s.table)} round ${s.round}</a>` : "";
  };
  const cut = a.dealers_truncated ? `<p class="hint" id="dealers-truncated">Showing ${a.dealers.length} of ${a.dealers_total} dealers: the list is cut, and the floor's medians are over those shown.</p>` : "";
  return `<div class="card"><h2>Dealers</h2><p class="hint">Per 1,000 decided rounds, against the floor's median; null under 100 rounds. Rounds per hour of dealing, summed over stints (a table's rounds with no pause over 20 minutes), against the floor's quartiles; null under 30 minutes of dealing. An alarm links to the round where it was raised.</p>${cut}
    <table class="list" id="dealers-table"><thead><tr><th>Dealer</th><th class="num">Rounds</th><th class="num">Payout errors</th><th class="num">Disputed</th><th class="num">Irregular</th><th class="num">Exposed cards</th><th class="num">Rounds per hour</th><th>Alarm</th></tr></thead><tbody>
    ${a.dealers.map(d => `<tr data-dealer="${esc(d.dealer)}"><td>${esc(d.dealer)}</td><td class="num">${d.rounds}</td><td class="num">${rate(d.payout_errors)}</td><td class="num">${rate(d.disputed)}</td><td class="num">${rate(d.irregular)}</td><td class="num">${rate(d.exposures)}</td><td class="num">${pace(d.pace)}</td><td>${alarm(d)}</td></tr>`).join("")}
    </tbody></table></div>`;
}

// ---------- cases ----------
async function casesView(view, q) {
  loading(view, "cases");
  try {
    const p = new URLSearchParams({ limit: PAGE, offset: q.get("offset") || 0 });
    for (const k of ["status", "assignee"]) if (q.get(k)) p.set(k, q.get(k));
    const page = await api("/v1/cases?" + p);
    const base = "#/cases?" + new URLSearchParams([...q].filter(([k]) => k !== "offset"));
    view.innerHTML = `<div class="card"><h1>Cases</h1><p class="hint">Cases are opened from a round's page. Entries are never changed or removed.
      Show: <a href="#/cases">all</a> · <a href="#/cases?status=open">open</a> · <a href="#/cases?status=closed">closed</a> · <a href="#/cases?status=open&assignee=${encodeURIComponent(state.who.name)}">open and mine</a></p>
      ${page.items.length ? `<table class="list" id="cases-table"><thead><tr><th class="num">Case</th><th>Table</th><th class="num">Round</th><th>Title</th><th>Status</th><th>Assignee</th><th>Opened by</th><th>Last entry</th></tr></thead><tbody>
      ${page.items.map(c => `<tr class="clickable" data-href="#/round/${encodeURIComponent(c.table)}/${c.round}"><td class="num">${c.id}</td><td>${esc(c.table)}</td><td class="num">${c.round}</td><td>${esc(c.title)}</td><td>${c.open ? "open" : "closed: " + esc(c.decision)}</td><td>${esc(c.assignee || "")}</td><td>${esc(c.entries[0].author)}</td><td>${time(c.entries[c.entries.length - 1].at_ns)}</td></tr>`).join("")}
      </tbody></table>` + pager(q, page.total, base) : `<div class="empty">No case matches. Open one from a round's page.</div>`}</div>`;
    clickableRows(view);
  } catch (e) { failed(view, e); }
}

// ---------- tables & chains ----------
async function tablesView(view) {
  loading(view, "tables");
  try {
    const tables = await api("/v1/tables");
    // Chain status, the quarantine and alerts are surveillance's and admin's (the server's
    // policy): a finance page never asks for them.
    const chainRole = ["surveillance", "admin"].includes(state.who.role);
    const [chains, quarantine, alerts] = chainRole
      ? await Promise.all([api("/v1/chain"), api(`/v1/quarantine?limit=${PAGE}`), api("/v1/alerts")])
      : [[], null, null];
    const ch = Object.fromEntries(chains.map(c => [c.table, c]));
    view.innerHTML = `${forkBanner(chains)}<div class="card"><h1>Tables and chains</h1><p class="hint">Each table's hash chain is recomputed from the stored bytes as the server reads it. Events after the last device-signed checkpoint are not yet attested; a gap holds the events after it until the missing ones arrive.</p>
      ${tables.length ? `<table class="list"><thead><tr><th>Table</th><th>Rule set</th><th class="num">Events</th><th class="num">Rounds</th><th class="num">Disputed</th><th class="num">Irregular</th><th class="num">Void</th><th>Chain</th><th>Attested</th><th>Gap</th></tr></thead><tbody>
      ${tables.map(t => { const c = ch[t.table]; return `<tr><td>${esc(t.table)}${t.fenced ? ` <span class="badge disputed" title="${esc(t.fenced)}">damaged: fenced</span>` : ""}</td><td>${esc(t.rule_set || "")}</td><td class="num">${t.head_seq}</td><td class="num">${t.rounds}</td><td class="num">${t.disputed}</td><td class="num">${t.irregular}</td><td class="num">${t.void}</td>
        <td>${c && c.fenced ? `<span class="badge disputed">fenced</span> ${esc(c.fenced)}` : c && (c.disputed || []).length ? `<span class="badge disputed">DISPUTED</span> ${c.disputed.map(d => `#${d.seq}`).join(", ")}` : c ? (c.ok ? `<span class="badge clean">verified</span> to #${c.verified_through}` : c.problem ? `<span class="badge disputed">broken</span> ${esc(c.problem)}` : `verifying… #${c.verified_through}`) : "—"}</td>
        <td>${c ? attestedCell(c) : "—"}</td>
        <td>${c && c.gap ? gapCell(c.gap) : c ? "none" : "—"}</td></tr>`; }).join("")}
      ${chains.filter(c => !tables.some(t => t.table === c.table)).map(c => `<tr class="held-only"><td>${esc(c.table)}</td><td colspan="6" class="muted">no event stored yet</td><td>—</td><td>—</td><td>${c.gap ? gapCell(c.gap) : "none"}</td></tr>`).join("")}
      </tbody></table>` : `<div class="empty">The ledger holds no table yet.</div>`}</div>
      ${alerts ? alertsCard(alerts) : ""}
      ${quarantine ? quarantineCard(quarantine) : ""}`;
    quarantineRows(view);
  } catch (e) { failed(view, e); }
}

// Seqs with two signed events (one stored, one quarantined as a fork): a stolen device key
// or a faulty device. Shown above everything else on the page.
function forkBanner(chains) {
  const forks = chains.flatMap(c => c.disputed || []);
  if (!forks.length) return "";
  const rows = forks.map(d => `<li><b>${esc(d.table)}</b> seq ${d.seq}: stored event <code>${d.stored ? esc(String(d.stored).slice(0, 16)) + "…" : "none yet (held)"}</code>; quarantine entry ${d.quarantine_id} holds another, <code>${esc(String(d.quarantined).slice(0, 16))}…</code></li>`).join("");
  return `<div class="card fork-banner" id="fork-banner" role="alert"><h2>FORK: two signed events at one seq</h2><p>A stolen device key or a faulty device. <code>roundledger verify</code> names both events; RUNBOOK.md says what to do.</p><ul>${rows}</ul></div>`;
}

// A table holding events beyond a gap: what is missing, what is held and since when,
// and the refused event it waits for (RUNBOOK.md says what to do).
function gapCell(g) {
  const range = (a, b) => `#${a}${b !== a ? "–" + b : ""}`;
  const blocked = g.blocked_by ? ` <span class="badge irregular">blocked by #${g.blocked_by.seq}: ${esc(g.blocked_by.reason)}</span> (quarantine entry ${g.blocked_by.quarantine_id})` : "";
  return `<span class="badge disputed">missing ${range(g.missing_from, g.missing_to)}</span> held ${range(g.missing_to + 1, g.held_last)}: ${g.held} ${g.held === 1 ? "event" : "events"}, ${g.held_bytes} bytes, since ${time(g.since_ns)}${blocked}`;
}

function attestedCell(c) {
  if (c.attested_through == null) return `<span class="badge irregular">not yet attested</span>`;
  const behind = c.head_seq - c.attested_through;
  return `to #${c.attested_through}` + (behind > 0 ? ` <span class="muted">(${behind} not yet attested)</span>` : "");
}

// Ingest's alerts: a fork, a publisher that is not the table's device, stalled attestation,
// a table stuck behind a gap.
function alertsCard(a) {
  const rows = a.alerts.map(x => `<tr><td>${time(x.raised_at_ns)}</td><td>${esc(x.table)}</td><td>${badge(x.kind)}</td><td class="num">${x.count}</td><td>${time(x.last_at_ns)}</td><td>${esc(x.detail)}</td></tr>`).join("");
  return `<div class="card" id="alerts"><h2>Alerts</h2><p class="hint">What ingest raised for the operators, newest first; also published on NATS as <code>alerts.&lt;table&gt;.&lt;kind&gt;</code>. Repeats within a minute count into one alert.</p>
    ${a.alerts.length ? `<table class="list"><thead><tr><th>Raised</th><th>Table</th><th>Kind</th><th class="num">Count</th><th>Last</th><th>What</th></tr></thead><tbody>${rows}</tbody></table>` : `<div class="empty">No alerts.</div>`}</div>`;
}

function quarantineCard(q) {
  const reasons = Object.entries(q.by_reason).map(([r, n]) => `${badge(r)} ${n}`).join(" ");
  return `<div class="card" id="quarantine"><h2>Quarantine</h2><p class="hint">Messages the ledger refused to chain, kept verbatim with the reason, never dropped. ${q.head.entries} ${q.head.entries === 1 ? "entry" : "entries"}${q.head.entries ? `, chained to <code>${esc(String(q.head.hash).slice(0, 16))}…</code> (checked by verify and named by digests)` : ""}.</p>
    ${q.items.length ? `<p>${reasons}</p><table class="list"><thead><tr><th class="num">#</th><th>Received</th><th>Reason</th><th>Subject</th><th class="num">Stream seq</th><th class="num">Bytes</th><th class="num" title="The same bytes refused again for the same reason, under any message id">Repeats</th><th>Why</th></tr></thead><tbody>
    ${q.items.map(e => `<tr class="clickable" data-quarantine="${e.id}" title="Show the message's bytes"><td class="num">${e.id}</td><td>${time(e.received_at_ns)}</td><td>${badge(e.reason)}</td><td>${esc(e.subject_table || "")}</td><td class="num">${e.stream_seq}</td><td class="num">${e.bytes_len}</td><td class="num">${e.repeats || 0}</td><td>${esc(e.text)}</td></tr>`).join("")}
    </tbody></table>${q.total > q.items.length ? `<p class="muted">The newest ${q.items.length} of ${q.total}.</p>` : ""}` : `<div class="empty">Nothing quarantined.</div>`}</div>`;
}

// A quarantine row opens (or closes) a row under it with the message's bytes, verbatim.
function quarantineRows(el) {
  el.querySelectorAll("tr[data-quarantine]").forEach(tr => tr.onclick = async () => {
    const open = tr.nextElementSibling;
    if (open && open.classList.contains("bytes")) { open.remove(); return; }
    const row = document.createElement("tr");
    row.className = "bytes";
    row.innerHTML = `<td colspan="8" class="muted">Loading the message…</td>`;
    tr.after(row);
    try {
      const e = await api(`/v1/quarantine/${tr.dataset.quarantine}`);
      row.innerHTML = `<td colspan="8"><p class="hint">${e.bytes_len} bytes as received (hex):</p><pre class="hex">${esc(e.bytes_hex.replace(/(.{64})/g, "$1\n"))}</pre></td>`;
    } catch (err) { row.innerHTML = `<td colspan="8" class="error" role="alert">${esc(err.message)}</td>`; }
  });
}

// ---------- finance ----------
// Finance closes every table every shift: the three wins (accounting from the count and
// the tray counts, recorded from the rounds, rules from the replay), hold against its
// theoretical interval, and each variance with its cause and what it is computed from.
const SPANS = { day: "Gaming day", shift: "Shift", mtd: "Month to date", ytd: "Year to date" };
// The gaming day in progress, as the server's day rule says (whoami); the calendar date in
// the property's zone only when the server did not say.
function todayLocal() {
  if (state.gamingDay) return state.gamingDay;
  const p = wallParts(Date.now(), state.tz);
  return `${p.year}-${p.month}-${p.day}`;
}
function reportQuery(q) {
  const span = q.get("span") || "day", day = q.get("day") || todayLocal();
  const p = new URLSearchParams({ group_by: q.get("group_by") || "table" });
  p.set(span, span === "shift" ? `${day}/${q.get("n") || 1}` : day);
  if (q.get("table")) p.set("table", q.get("table"));
  return p;
}
function pct(bp) { return bp == null ? "—" : (bp / 100).toFixed(2) + "%"; }
function maybe(m, what) { return m == null ? `<span class="muted">${what}</span>` : money(m); }

async function financeView(view, q) {
  loading(view, "finance");
  try {
    const rq = reportQuery(q);
    const day = q.get("day") || todayLocal();
    const liability = (q.get("span") || "day") === "day" ? api("/v1/reports/jackpots?day=" + day).catch(() => null) : null;
    const [report, pools, pooled] = await Promise.all([api("/v1/reports?" + rq), api("/v1/pools").catch(() => []), liability]);
    view.innerHTML = financeForm(q) + reportSummary(report) + holdChart(report) + groupsTable(report)
      + variancesTable(report) + liabilityCard(day, pooled) + poolsCard(pools) + `<div class="card" id="round-finance" hidden></div>`;
    bindFilter(view, "finance-form", "#/finance");
    $("#csv-report", view).onclick = () => downloadReportCsv(rq);
    $("#print-report", view).onclick = () => window.print();
    view.querySelectorAll("a[data-finance-round]").forEach(a => a.onclick = ev => { ev.preventDefault(); roundFinance(view, a.dataset.financeRound, a.dataset.cause); });
  } catch (e) { failed(view, e); }
}

function financeForm(q) {
  const sel = (name, opts, cur) => `<select id="fin-${name}" name="${name}">${Object.entries(opts).map(([k, v]) => `<option value="${k}" ${cur === k ? "selected" : ""}>${esc(v)}</option>`).join("")}</select>`;
  return `<div class="card"><h1>Finance</h1><p class="hint">Drop, fills, credits, tray counts and the three wins per table and shift, in ${zoneLabel()}. A variance names its cause and links what it is computed from.</p>
    <form id="finance-form" class="form-row">
      <div><label for="fin-span">Span</label>${sel("span", SPANS, q.get("span") || "day")}</div>
      <div><label for="fin-day">Gaming day</label><input id="fin-day" name="day" type="text" pattern="\\d{4}-\\d{2}-\\d{2}" placeholder="yyyy-mm-dd" title="yyyy-mm-dd, as every date on these pages" value="${esc(q.get("day") || todayLocal())}"></div>
      <div><label for="fin-n">Shift (for a shift)</label><input id="fin-n" name="n" type="number" min="1" max="6" value="${esc(q.get("n") || "1")}"></div>
      <div><label for="fin-group_by">Group by</label>${sel("group_by", { table: "Table", pit: "Pit", game: "Game", shift: "Shift", day: "Day", dealer: "Dealer" }, q.get("group_by") || "table")}</div>
      <div><label for="fin-table">Table</label><input id="fin-table" name="table" value="${esc(q.get("table") || "")}" placeholder="all tables"></div>
      <div><button type="submit">Show</button></div>
    </form>
    <button class="secondary" id="csv-report">CSV for accounting</button> <button class="secondary" id="print-report">Print</button></div>`;
}

// A group's 95% win interval; "theoretical pending" while a configured pay table of its
// bets is not priced yet (the server prices it in the background).
function interval(g) {
  return g.theoretical_pending ? `<span class="muted pending">theoretical pending</span>` : `${money(g.win_low)} to ${money(g.win_high)}`;
}

function reportSummary(r) {
  const t = r.total;
  const tile = (label, value, cls = "") => `<div class="tile ${cls}"><div class="label">${label}</div><div class="value">${value}</div></div>`;
  return `<div class="card"><h2>${esc(r.span)} <span class="muted">· ${esc(r.day_rule)} · ${time(r.starts_at_ns)} to ${time(r.ends_at_ns)}</span></h2>
    <div class="tiles" id="finance-tiles">
      ${tile("Drop (counted)", maybe(t.drop, "not yet counted"))}
      ${tile("Win: accounting", maybe(t.win_accounting, "needs the count"))}
      ${tile("Win: recorded", money(t.win_recorded), t.win_recorded !== t.win_rules ? "diff" : "")}
      ${tile("Win: rules", money(t.win_rules))}
      ${tile("Hold", pct(t.hold_bp))}
      ${tile("Theoretical hold", pct(t.hold_theoretical_bp))}
      ${tile("Win interval (95%)", interval(t), t.hold_alarm ? "diff" : "")}
      ${tile("Jackpots paid", money(t.jackpot_paid_recorded))}
      ${tile("Variances", String(r.variances_total), r.variances_total ? "diff" : "")}
    </div>${(t.not_known || []).length ? `<ul class="hint" id="not-known">${t.not_known.map(w => `<li>Not known: ${esc(w)}</li>`).join("")}</ul>` : ""}</div>`;
}

// Hold against theoretical hold per group, as bars (at most 40 groups). A dealer has no
// drop of their own: their hold is per priced handle.
function holdOf(r, g) {
  return r.group_by === "dealer" ? [g.hold_handle_bp, g.hold_handle_theoretical_bp] : [g.hold_bp, g.hold_theoretical_bp];
}
// Actual against theoretical hold, one row per group (label, then the two bars about a
// zero axis): labels never overlap, and 50 tables or more read as a list does.
function holdChart(r) {
  const gs = r.groups.map(g => { const [a, t] = holdOf(r, g); return { ...g, hold_bp: a, hold_theoretical_bp: t }; })
    .filter(g => g.hold_bp != null || g.hold_theoretical_bp != null);
  if (!gs.length) return "";
  const max = Math.max(100, ...gs.flatMap(g => [Math.abs(g.hold_bp || 0), Math.abs(g.hold_theoretical_bp || 0)]));
  const label = 120, half = 200, row = 18, axis = label + half;
  const bar = (y, v, cls) => { const len = Math.round(Math.abs(v || 0) / max * half); return `<rect class="${cls}" x="${v >= 0 ? axis : axis - len}" y="${y}" width="${len}" height="${row / 2 - 1}"><title>${pct(v)}</title></rect>`; };
  const svg = gs.map((g, i) => { const y = i * row; return `<text x="0" y="${y + row - 5}" class="lbl">${esc(g.key)}</text>`
    + bar(y, g.hold_bp, "actual" + (g.hold_alarm ? " alarm" : "")) + bar(y + row / 2, g.hold_theoretical_bp, "theo"); }).join("");
  const height = gs.length * row;
  return `<div class="card"><h2>Hold against theoretical hold</h2><p class="hint">Per ${esc(r.group_by)}: dark, actual hold; light, theoretical; red, outside the 95% interval. The axis is 0; the bars reach ±${pct(max)}.</p>
    <svg class="hold-chart" id="hold-chart" width="${axis + half}" height="${height}" viewBox="0 0 ${axis + half} ${height}"><line x1="${axis}" x2="${axis}" y1="0" y2="${height}" class="axis"/>${svg}</svg></div>`;
}

function groupsTable(r) {
  if (r.no_play || !r.groups.length) return `<div class="card empty">No table played in this span: these figures are of no play, not results.</div>`;
  return `<div class="card"><h2>By ${esc(r.group_by)}</h2><table class="list" id="report-table"><thead><tr>
    <th>${esc(r.group_by)}</th><th class="num">Rounds</th><th class="num">Drop</th><th class="num">Buy-ins</th><th class="num">Markers</th><th class="num">Handle</th><th class="num">Theo. win</th><th class="num">Fills</th><th class="num">Credits</th><th class="num">Opening</th><th class="num">Closing</th>
    <th class="num">Win (accounting)</th><th class="num">Win (recorded)</th><th class="num">Win (rules)</th><th class="num">Hold</th><th class="num">Theo. hold</th><th class="num">Hold / handle</th><th class="num">Theo. / handle</th><th>95% interval</th><th class="num">Variances</th></tr></thead><tbody>
    ${r.groups.map(g => `<tr class="${g.variances || g.hold_alarm ? "diff" : ""}"><td>${esc(g.key)}${g.hold_alarm ? ' <span class="badge critical">hold alarm</span>' : ""}</td><td class="num">${g.rounds}</td>
      <td class="num">${r.group_by === "dealer" ? "— (the table's)" : maybe(g.drop, "not counted")}</td><td class="num">${maybe(g.buy_ins, "—")}</td><td class="num">${maybe(g.markers, "—")}</td>
      <td class="num">${money(g.handle_priced)}</td><td class="num">${g.theoretical_pending ? '<span class="muted pending">pending</span>' : money(g.theoretical_win)}</td><td class="num">${maybe(g.fills, "—")}</td><td class="num">${maybe(g.credits, "—")}</td><td class="num">${maybe(g.opening, "not yet counted")}</td><td class="num">${maybe(g.closing, "not yet counted")}</td>
      <td class="num">${maybe(g.win_accounting, "—")}</td><td class="num">${money(g.win_recorded)}</td><td class="num">${money(g.win_rules)}</td><td class="num">${pct(g.hold_bp)}</td><td class="num">${pct(g.hold_theoretical_bp)}</td>
      <td class="num">${pct(g.hold_handle_bp)}</td><td class="num">${pct(g.hold_handle_theoretical_bp)}</td>
      <td>${interval(g)}</td><td class="num">${g.variances}</td></tr>`).join("")}
    </tbody></table></div>`;
}

function linkHtml(l, cause) {
  if (l.kind === "round" && l.round != null) return `<a href="#" data-finance-round="${esc(l.table)}/${l.round}" data-cause="${esc(cause || "")}">${esc(l.text)}</a>`;
  return `<span class="link-${esc(l.kind)}">${esc(l.text)}</span>`;
}
function variancesTable(r) {
  if (!r.variances.length) return `<div class="card"><h2>Variances</h2><div class="empty">None: the three wins agree wherever they can be compared.</div></div>`;
  return `<div class="card"><h2>Variances</h2><p class="hint">Each difference with its cause. A round opens its finance summary: what was paid and what was due.</p>
    <table class="list" id="variances-table"><thead><tr><th>Shift</th><th>Table</th><th>Cause</th><th class="num">Amount</th><th>What</th><th>From</th></tr></thead><tbody>
    ${r.variances.map(v => `<tr class="diff"><td>${esc(v.shift)}</td><td>${esc(v.table)}</td><td>${badge(v.cause)}</td><td class="num">${signed(v.amount)}</td><td>${esc(v.text)}</td><td>${v.links.map(l => linkHtml(l, v.cause)).join("<br>")}</td></tr>`).join("")}
    </tbody></table>${r.variances_total > r.variances.length ? `<p class="muted">The first ${r.variances.length} of ${r.variances_total}.</p>` : ""}</div>`;
}

// Each jackpot pool's liability over the gaming day (by arrival, the House's order),
// against what the controller last displayed.
function liabilityCard(day, rows) {
  if (rows == null) return "";
  const shown = r => r.displayed == null ? "—" : money(r.displayed);
  return `<div class="card"><h2>Jackpot liability, gaming day ${esc(day)}</h2>${rows.length ? `<table class="list" id="liability-table"><thead><tr><th>Pool</th><th class="num">Opening</th><th class="num">Contributions</th><th class="num">Hits</th><th class="num">Paid</th><th class="num">Resets</th><th class="num">Closing</th><th class="num">Displayed</th><th class="num">Difference</th></tr></thead><tbody>
    ${rows.map(r => `<tr class="${r.difference ? "diff" : ""}"><td>${esc(r.pool)}</td><td class="num">${money(r.opening)}</td><td class="num">${money(r.contributions)}</td><td class="num">${r.hits}</td><td class="num">${money(r.paid)}</td><td class="num">${r.resets}</td><td class="num">${money(r.closing)}</td><td class="num">${shown(r)}</td><td class="num">${r.difference == null ? "—" : signed(r.difference)}</td></tr>`).join("")}
    </tbody></table>` : `<div class="empty">No jackpot pool moved on this day.</div>`}</div>`;
}

function poolsCard(pools) {
  const asOf = time(BigInt(Date.now()) * 1000000n);
  return `<div class="card"><h2>Jackpot pools: all time</h2><p class="hint" id="pools-as-of">Since each pool's first event in the ledger, as of ${esc(asOf)}; the liability card above is the gaming day's.</p>${pools.length ? `<table class="list"><thead><tr><th>Pool</th><th>Tables</th><th class="num">Last shown</th><th class="num">Recomputed</th><th class="num">Wins</th><th class="num">Mismatches</th></tr></thead><tbody>
      ${pools.map(p => `<tr class="${p.mismatches.length ? "diff" : ""}"><td>${esc(p.pool)}</td><td>${p.tables.map(esc).join(", ")}</td><td class="num">${money(p.last_shown)}</td><td class="num">${money(p.recomputed)}</td><td class="num">${p.wins}</td><td class="num">${p.mismatches.length}</td></tr>`).join("")}</tbody></table>` : `<div class="empty">No jackpot pool.</div>`}</div>`;
}

// A round a variance links to: its cause, what was paid and due per line, the verdict and
// the findings with their clauses (what finance may read of a round).
async function roundFinance(view, tableRound, cause) {
  const el = $("#round-finance", view);
  el.hidden = false; el.innerHTML = `<p class="muted">Loading round ${esc(tableRound)}…</p>`;
  try {
    const [t, n] = tableRound.split("/");
    const r = await api(`/v1/finance/rounds/${encodeURIComponent(t)}/${n}`);
    el.innerHTML = `<h2>Table ${esc(r.table)} · round ${r.round}: paid and due</h2><p class="muted">${esc(r.rule_set || "")} · opened ${time(r.opened_at_ns)} · events #${r.first_seq}–#${r.last_seq}</p>
      <table class="list" id="round-finance-lines"><thead><tr><th class="num">Box</th><th>Line</th><th class="num">Paid</th><th class="num">Due</th><th class="num">Difference</th></tr></thead><tbody>
      ${r.lines.map(l => `<tr class="${l.recorded !== l.due ? "diff" : ""}"><td class="num">${l.box_no}</td><td>${esc(l.line.replace(/_/g, " "))}</td><td class="num">${signed(l.recorded)}</td><td class="num">${signed(l.due)}</td><td class="num">${l.recorded !== l.due ? signed(l.recorded - l.due) : "—"}</td></tr>`).join("")}
      </tbody></table>
      <p id="round-finance-cause">${cause ? `Variance cause: ${badge(cause)} · ` : ""}Verdict: ${badge(r.verdict)}</p>
      <div id="round-finance-findings">${findingsList(r.findings)}</div>`;
    el.scrollIntoView({ block: "nearest" });
  } catch (e) { el.innerHTML = `<p class="error">${esc(e.message)}</p>`; }
}

async function downloadReportCsv(rq) {
  const p = new URLSearchParams(rq); p.set("format", "csv");
  const res = await api("/v1/reports?" + p, { raw: true });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(await res.blob());
  a.download = `roundledger-finance-${[...rq.entries()].map(([k, v]) => k + "-" + v).join("_").replace(/[^A-Za-z0-9_-]+/g, "-")}.csv`;
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

// ---------- audit ----------
async function auditView(view, q) {
  loading(view, "the audit log");
  try {
    const first = await api("/v1/audit?limit=1");
    const off = q.get("offset") != null ? Number(q.get("offset")) : Math.max(0, first.total - PAGE);
    const page = await api(`/v1/audit?limit=${PAGE}&offset=${off}`);
    view.innerHTML = `<div class="card"><h1>Audit log</h1><p class="hint">Every API request: who, role, what, when, and the answer. A change (a case) is recorded when received, before it is made, and again with its answer. Append-only; this page is recorded too.</p>
      <table class="list"><thead><tr><th class="num">#</th><th>When</th><th>Who</th><th>Role</th><th>Client</th><th>Request</th><th class="num">Status</th></tr></thead><tbody>
      ${page.items.slice().reverse().map(a => `<tr><td class="num">${a.id}</td><td>${time(a.at_ns)}</td><td>${esc(a.who)}</td><td>${esc(a.role || "")}</td><td>${esc(a.client || "")}</td><td><code>${esc(a.method)} ${esc(a.path)}${a.query ? "?" + esc(a.query) : ""}</code></td><td class="num">${a.status ?? "received"}${a.received ? ` (of #${a.received})` : ""}</td></tr>`).join("")}
      </tbody></table>${pager(new URLSearchParams({ offset: off }), page.total, "#/audit")}</div>`;
  } catch (e) { failed(view, e); }
}

// ---------- round view ----------
// A print states when it was printed: the round page's "printed at" is set as printing starts.
function markPrinted() { const el = $("#printed-at"); if (el) el.textContent = time(BigInt(Date.now()) * 1000000n); }
window.addEventListener("beforeprint", markPrinted);
window.matchMedia("print").addEventListener("change", m => { if (m.matches) markPrinted(); });
async function roundView(view, table, round) {
  loading(view, `round ${round} of ${table}`);
  let detail, steps;
  try {
    [detail, steps] = await Promise.all([
      api(`/v1/tables/${encodeURIComponent(table)}/rounds/${round}`),
      api(`/v1/tables/${encodeURIComponent(table)}/rounds/${round}/steps`),
    ]);
  } catch (e) { return failed(view, e); }
  state.detail = detail; state.steps = steps.steps; state.k = 0;
  const r = detail.row;
  const disputedBoxes = new Set(detail.settlement.filter(s => s.difference !== 0).map(s => s.box));
  state.disputedBoxes = disputedBoxes;
  view.innerHTML = `
  <div class="card round-head">
    <div class="print-only" id="print-meta">Printed by <b>${esc(state.who.name)}</b> (${esc(state.who.role)}) at <span id="printed-at">${esc(time(BigInt(Date.now()) * 1000000n))}</span>, ${zoneLabel()}</div>
    <h1>Table ${esc(r.table)} · round ${r.round}</h1>${verdictBadge(r)}
    <span class="muted">${esc(r.rule_set || "")} · opened ${time(r.opened_at_ns)} · events #${r.first_seq}–#${r.last_seq}</span>
    <span class="push-right"></span>
    <button class="secondary" id="print-btn" title="an incident report of this round: the settlement, findings, timeline and cases">Print report</button>
    <button id="evidence-btn">Download evidence bundle</button>
  </div>
  ${(detail.resyncs || []).map(x => `<div class="card notice resync">Event #${x.seq} was refused by the ledger (quarantine entry ${x.quarantine_id}) and admitted by an admin's re-sync at ${time(x.signed_at_ns)}: ${esc(x.note)}</div>`).join("")}
  ${r.in_progress ? `<div class="card notice" id="in-progress">This round is still being played: no <code>RoundClosed</code> is stored yet. What follows is its replay so far; the verdict comes when it closes.</div>` : ""}
  <div class="round-grid">
    <div>
      <div class="card">
        <h2>Replay</h2>
        <div class="felt" id="felt"></div>
        <div class="stepper" role="group" aria-label="step control">
          <button class="secondary" id="step-first" title="first event (Home)">|◀ First</button>
          <button class="secondary" id="step-back" title="previous event (←)">◀ Back</button>
          <span class="pos" id="step-pos"></span>
          <button class="secondary" id="step-fwd" title="next event (→)">Forward ▶</button>
          <button class="secondary" id="step-last" title="last event (End)">Last ▶|</button>
          <input type="range" id="step-range" min="0" max="${Math.max(0, state.steps.length - 1)}" value="0" aria-label="event">
        </div>
        <div class="current-event" id="current-event"></div>
      </div>
      <div class="card"><h2>Settlement: rules vs recorded</h2>
        <p class="hint">Player's net result per box and line. Rows in red differ: positive = the dealer overpaid, negative = underpaid.</p>
        ${settlementTable(detail.settlement)}
      </div>
      <div class="card"><h2>Findings</h2>${findingsList(detail.findings, detail)}</div>
    </div>
    <div>
      <div class="card"><h2>Timeline</h2><p class="hint">Click an event to jump to it. Keys: ← → Home End. Device time (arrival in the tooltip), ${zoneLabel()}.</p><div class="timeline"><ol id="timeline">
        ${detail.events.map((e, i) => `<li data-k="${i}" title="device ${esc(time(e.occurred_at_ns))}${esc(recorder(e.occurred_at_ns))}; arrived ${esc(time(e.received_at_ns))}"><span>#${e.seq}</span><span class="muted">${clock(e.occurred_at_ns)} +${((e.occurred_at_ns - detail.events[0].occurred_at_ns) / 1e9).toFixed(1)}s</span><span>${esc(e.description)}</span></li>`).join("")}
      </ol></div></div>
      <div class="card" id="cases-card"><h2>Case notes</h2><div id="cases"></div></div>
    </div>
  </div>`;
  $("#step-first").onclick = () => setStep(0);
  $("#step-back").onclick = () => setStep(state.k - 1);
  $("#step-fwd").onclick = () => setStep(state.k + 1);
  $("#step-last").onclick = () => setStep(state.steps.length - 1);
  $("#step-range").oninput = ev => setStep(Number(ev.target.value));
  document.querySelectorAll("#timeline li").forEach(li => li.onclick = () => setStep(Number(li.dataset.k)));
  $("#evidence-btn").onclick = () => downloadEvidence(r.table, r.round);
  $("#print-btn").onclick = () => window.print();
  setStep(0);
  loadCases(view);
}

document.addEventListener("keydown", ev => {
  if (!state.steps || !$("#felt") || ["INPUT", "TEXTAREA", "SELECT"].includes(document.activeElement.tagName)) return;
  if (ev.key === "ArrowRight") setStep(state.k + 1);
  else if (ev.key === "ArrowLeft") setStep(state.k - 1);
  else if (ev.key === "Home") setStep(0);
  else if (ev.key === "End") setStep(state.steps.length - 1);
});

function setStep(k) {
  const n = state.steps.length;
  if (!n) { $("#felt").innerHTML = `<div class="empty on-felt-empty">No replay steps: the round has no configuration in force.</div>`; return; }
  state.k = Math.max(0, Math.min(n - 1, k));
  const s = state.steps[state.k], prev = state.steps[state.k - 1] || {};
  const ev = state.detail.events[state.k];
  $("#step-pos").textContent = `event ${state.k + 1} of ${n}`;
  $("#step-range").value = state.k;
  $("#step-back").disabled = $("#step-first").disabled = state.k === 0;
  $("#step-fwd").disabled = $("#step-last").disabled = state.k === n - 1;
  $("#current-event").innerHTML = ev ? `<b>#${ev.seq}</b> ${esc(ev.device)}: ${esc(ev.description)}
    <div class="muted" id="event-times">device ${esc(time(ev.occurred_at_ns))}${esc(recorder(ev.occurred_at_ns))} · arrived ${esc(time(ev.received_at_ns))}</div>` : "";
  document.querySelectorAll("#timeline li").forEach((li, i) => {
    li.className = i < state.k ? "past" : i === state.k ? "now" : "future";
    if (i === state.k) li.scrollIntoView({ block: "nearest" });
  });
  const boxes = new Set([...Object.keys(s.bets || {}), ...Object.keys(s.cards || {}), ...state.detail.row.boxes.map(String)]);
  const sorted = [...boxes].map(Number).sort((a, b) => a - b);
  const pc = prev.cards || {};
  $("#felt").innerHTML = `
    <div class="phase">${esc(String(s.phase).replace(/_/g, " "))}</div>
    ${s.void ? '<div class="void-banner">VOID</div>' : ""}
    <div class="dealer-row">
      <div class="spot"><div class="label">Dealer</div>${handHtml(s.dealer, prev.dealer)}${handName("dealer")}</div>
      <div class="spot"><div class="label">Burnt</div>${handHtml(s.burn, prev.burn)}</div>
    </div>
    <div class="boxes">${sorted.map(b => {
      const bets = Object.entries((s.bets || {})[b] || {}).map(([k, v]) => `${k.replace(/_/g, " ")} ${stakeText(v)}`).join(" · ");
      const play = (s.plays || {})[b]; const dec = (s.decisions || {})[b];
      const paid = Object.entries((s.paid || {})[b] || {}).map(([l, m]) => `${l.replace(/_/g, " ")} ${signed(m)}`).join(" · ");
      // What the rules say each line was due, once the dealer pays or at the last event.
      const settled = paid || state.k === state.steps.length - 1;
      const due = settled ? state.detail.settlement.filter(x => x.box === b)
        .map(x => `<span class="${x.difference !== 0 ? "due-diff" : ""}">${esc(x.line.replace(/_/g, " "))} ${signed(x.expected)}</span>`).join(" · ") : "";
      return `<div class="box${state.disputedBoxes.has(b) ? " disputed" : ""}" data-box="${b}"><div class="label">Box ${b}${state.disputedBoxes.has(b) ? " ⚠" : ""}</div>
        ${handHtml((s.cards || {})[b], pc[b])}${handName(b)}
        <div class="bets">${esc(bets)}${play ? " · play " + money(play) : ""}</div>
        <div class="decision">${esc(dec ? dec.replace(/_/g, " ") : "")}</div>
        <div class="bets">${paid ? "paid: " + esc(paid) : ""}</div>
        <div class="bets due">${due ? "due: " + due : ""}</div></div>`;
    }).join("") || '<div class="muted on-felt">No bets yet.</div>'}</div>`;
}

// Hand names as the rule books write them (schemas HandClass), keyed by its JSON name.
const HAND_NAMES = { high_card: "High card", one_pair: "One Pair", two_pairs: "Two Pairs", three_of_a_kind: "Three of a Kind",
  straight: "Straight", flush: "Flush", full_house: "Full House", four_of_a_kind: "Four of a Kind", straight_flush: "Straight Flush",
  royal_flush: "Royal Flush", mini_royal: "Mini Royal", mini_royal_spades: "Mini Royal of spades" };
// The hand of a box (or "dealer") as settled, named at the last event: the showdown.
function settledHand(who, detail = state.detail) {
  const st = detail && detail.report && detail.report.settlement;
  if (!st) return null;
  if (who === "dealer") return st.dealer_hand;
  const b = (st.boxes || []).find(x => x.box === who);
  return b ? b.hand : null;
}
function handName(who) {
  if (state.k !== state.steps.length - 1) return "";
  const h = settledHand(who);
  return h ? `<div class="hand-name">${esc(HAND_NAMES[h] || h.replace(/_/g, " "))}</div>` : "";
}

function settlementTable(rows) {
  if (!rows.length) return `<div class="empty">No settlement: the round could not be settled (see findings).</div>`;
  return `<table class="list" id="settlement"><thead><tr><th class="num">Box</th><th>Line</th><th class="num">Rules</th><th class="num">Recorded</th><th class="num">Difference</th><th>Why (clause)</th></tr></thead><tbody>
    ${rows.map(s => `<tr class="${s.difference !== 0 ? "diff" : ""}"><td class="num">${s.box}</td><td>${esc(s.line.replace(/_/g, " "))}</td><td class="num">${signed(s.expected)}</td><td class="num">${signed(s.recorded)}</td>
      <td class="num d">${s.difference !== 0 ? signed(s.difference) + (s.difference > 0 ? " overpaid" : " underpaid") : "—"}</td><td class="muted">${esc(s.explanation)} (${esc(s.clauses.join(", "))})</td></tr>`).join("")}
  </tbody></table>`;
}

// The findings of a round; `detail` (the round view's) marks each box's hand in the cited
// pay table, and is null where the cards are not shown (the finance page).
function findingsList(fs, detail = null) {
  if (!fs.length) return `<div class="empty">No findings: the round was played by the rules.</div>`;
  return fs.map(f => `<div class="finding ${esc(f.severity)}">${badge(f.severity)} <code>${esc(f.code)}</code> <b>${esc(f.clause)}</b>${f.box ? " · box " + f.box : ""} · events ${f.seqs.map(s => "#" + s).join(" ")}
    <div>${esc(f.explanation)}</div>${wordingHtml(f, detail)}${f.clause_text ? `<div class="clause">${esc(f.clause_text)}</div>` : ""}</div>`).join("");
}

// The cited clause in the rule book's words (verbatim excerpts, in the book's order).
// Marks the pay table row of `hand` in escaped text `t`: from the hand's name to the
// next hand's name (the next row), or to the end.
function markRow(t, hand) {
  const low = t.toLowerCase(), h = hand.toLowerCase();
  // A whole hand's name: "Flush" in "Straight Flush" or "Straight" in it is not one.
  const longer = Object.values(HAND_NAMES).map(x => x.toLowerCase()).filter(x => x !== h && x.includes(h));
  const inLonger = i => longer.some(x => { const o = x.indexOf(h); return low.startsWith(x, i - o); });
  let at = low.indexOf(h);
  while (at >= 0 && inLonger(at)) at = low.indexOf(h, at + 1);
  if (at < 0) return t;
  const from = at + hand.length;
  const nexts = Object.values(HAND_NAMES).map(h => low.indexOf(h.toLowerCase(), from)).filter(i => i >= 0);
  const end = nexts.length ? Math.min(...nexts) : t.length;
  return `${t.slice(0, at)}<mark class="deciding">${t.slice(at, end)}</mark>${t.slice(end)}`;
}

function wordingHtml(f, detail) {
  const w = f.clause_wording || [];
  if (!w.length) return "";
  // The deciding line: the pay table's row of the box's hand, marked where the words show it.
  const hand = f.box && detail ? HAND_NAMES[settledHand(f.box, detail)] : null;
  const mark = t => hand ? markRow(t, hand) : t;
  return `<blockquote class="wording"><span class="src">Rule book, ${esc(f.clause)}:</span> ${w.map(x => mark(esc(x))).join(' <span class="gap">…</span> ')}</blockquote>`;
}

// The case notes of the round shown (state.page): every write names that round, never
// one captured when the list was drawn.
async function loadCases(view) {
  const { table, round } = state.page;
  const el = $("#cases", view);
  el.innerHTML = `<p class="muted">Loading cases…</p>`;
  try {
    const page = await api(`/v1/cases?table=${encodeURIComponent(table)}&round=${round}`);
    el.innerHTML = (page.items.length ? page.items.map(c => `<div class="case"><b>Case ${c.id}: ${esc(c.title)}</b> — ${c.open ? "open" : "closed"}${c.assignee ? ` · assigned to ${esc(c.assignee)}` : ""}
      ${c.entries.map(e => `<div class="entry"><div class="meta">${time(e.at_ns)} · ${esc(e.author)} (${esc(e.role)}) · ${esc(e.action)}</div>${esc(e.text || e.decision || e.title || e.reason || (e.to ? "to " + e.to : ""))}</div>`).join("")}
      ${c.open ? `<form class="note-form" data-id="${c.id}"><label>Add a note</label><textarea name="text" required></textarea>
        <button type="submit">Add note</button> <button type="button" class="secondary assign-btn" data-id="${c.id}">Assign…</button> <button type="button" class="secondary close-btn" data-id="${c.id}">Close with decision…</button></form>`
        : `<button type="button" class="secondary reopen-btn" data-id="${c.id}">Reopen…</button>`}</div>`).join("")
      : `<p class="muted">No case on this round.</p>`) +
      `<form id="open-case"><label for="case-title">Open a case on this round</label><input id="case-title" name="title" required placeholder="e.g. patron at box 3 disputes the Ante payout">
       <button type="submit" class="below-input">Open case</button></form><p class="error" id="case-error" role="alert"></p>`;
    $("#open-case", el).onsubmit = ev => { ev.preventDefault(); caseAction(view, "/v1/cases", { table: state.page.table, round: Number(state.page.round), title: ev.target.title.value }); };
    el.querySelectorAll(".note-form").forEach(f => f.onsubmit = ev => { ev.preventDefault(); caseAction(view, `/v1/cases/${f.dataset.id}/notes`, { text: f.text.value }); });
    el.querySelectorAll(".assign-btn").forEach(b => b.onclick = () => {
      const to = prompt("Assign to (a person's name):", state.who.name);
      if (to) caseAction(view, `/v1/cases/${b.dataset.id}/assign`, { to });
    });
    el.querySelectorAll(".reopen-btn").forEach(b => b.onclick = () => {
      const reason = prompt("Why reopen it?");
      if (reason) caseAction(view, `/v1/cases/${b.dataset.id}/reopen`, { reason });
    });
    el.querySelectorAll(".close-btn").forEach(b => b.onclick = () => {
      const d = prompt("Decision (e.g. 'Patron paid the difference of 50.00; dealer retrained'):");
      if (d) caseAction(view, `/v1/cases/${b.dataset.id}/close`, { decision: d });
    });
  } catch (e) { el.innerHTML = `<p class="error">${esc(e.message)}</p>`; }
}

async function caseAction(view, path, body) {
  try { await api(path, { method: "POST", body: JSON.stringify(body) }); toast("Saved."); loadCases(view); }
  catch (e) { $("#case-error", view).textContent = e.message; }
}

async function downloadEvidence(table, round) {
  const btn = $("#evidence-btn"); btn.disabled = true; btn.textContent = "Preparing…";
  try {
    const res = await api(`/v1/evidence/${encodeURIComponent(table)}/${round}`, { raw: true });
    const blob = await res.blob();
    const a = document.createElement("a");
    a.href = URL.createObjectURL(blob); a.download = `evidence-${table}-round-${round}.json`;
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    toast("Evidence bundle downloaded. Check it with: roundledger verify-bundle FILE");
  } catch (e) { alert("Evidence export failed: " + e.message); }
  finally { btn.disabled = false; btn.textContent = "Download evidence bundle"; }
}

// ---------- lists: sorting and CSV ----------
// Every list table sorts by a click on its column header (numbers as numbers, again to
// reverse) and gets a CSV download of what it shows. One decorator for all pages.
function cellValue(td) {
  const t = td.innerText.trim();
  const n = Number(t.replace(/[,+]/g, ""));
  return td.classList.contains("num") && t !== "" && !Number.isNaN(n) ? n : t.toLowerCase();
}
function sortBy(table, col, th) {
  const body = table.tBodies[0];
  const dir = th.dataset.dir === "asc" ? -1 : 1;
  table.querySelectorAll("th").forEach(h => delete h.dataset.dir);
  th.dataset.dir = dir === 1 ? "asc" : "desc";
  const rows = [...body.rows];
  rows.sort((a, b) => {
    const x = cellValue(a.cells[col] || a), y = cellValue(b.cells[col] || b);
    return (x < y ? -1 : x > y ? 1 : 0) * dir;
  });
  body.append(...rows);
}
function csvOf(table) {
  const q = v => /[",\n]/.test(v) ? `"${v.replace(/"/g, '""')}"` : v;
  return [...table.rows].map(r => [...r.cells].map(c => q(c.innerText.trim())).join(",")).join("\r\n") + "\r\n";
}
function downloadCsv(table) {
  const name = (location.hash.slice(2).split("?")[0] || "list").replace(/[^A-Za-z0-9-]+/g, "-");
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([csvOf(table)], { type: "text/csv" }));
  a.download = `roundledger-${name}${table.id ? "-" + table.id : ""}.csv`;
  document.body.appendChild(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}
function decorate(table) {
  if (table.dataset.decorated || !table.tHead || !table.tBodies.length) return;
  table.dataset.decorated = "1";
  if (table.dataset.list) return decorateServerList(table);
  [...table.tHead.rows[0].cells].forEach((th, i) => {
    th.classList.add("sortable"); th.title = "sort by " + th.innerText;
    th.onclick = () => sortBy(table, i, th);
  });
  const b = document.createElement("button");
  b.className = "secondary csv no-print"; b.textContent = "CSV"; b.title = "download this list as CSV";
  b.onclick = () => downloadCsv(table);
  table.before(b);
}

// A list the server pages (data-list, its query in data-query): a header with a
// data-key sorts the whole result on the server (the hash's sort and order), and the
// CSV is the server's, of every matching row.
function decorateServerList(table) {
  const [path, q] = location.hash.split("?");
  const hq = new URLSearchParams(q || "");
  table.tHead.querySelectorAll("th[data-key]").forEach(th => {
    const key = th.dataset.key;
    const on = (hq.get("sort") || "opened_at") === key;
    const order = hq.get("order") || "desc";
    th.classList.add("sortable"); th.title = "sort the whole list by " + th.innerText;
    if (on) th.dataset.dir = order;
    th.onclick = () => {
      const n = new URLSearchParams(hq); n.delete("offset");
      n.set("sort", key); n.set("order", on && order === "asc" ? "desc" : "asc");
      location.hash = path + "?" + n;
    };
  });
  const b = document.createElement("button");
  b.className = "secondary csv no-print"; b.textContent = "CSV"; b.title = "download every matching row as CSV";
  b.onclick = () => downloadServerCsv(table.dataset.list, table.dataset.query);
  table.before(b);
}
async function downloadServerCsv(list, query) {
  const p = new URLSearchParams(query); p.set("format", "csv");
  try {
    const res = await api(`/v1/${list}?${p}`, { raw: true });
    const a = document.createElement("a");
    a.href = URL.createObjectURL(await res.blob());
    a.download = `roundledger-${list}.csv`;
    document.body.appendChild(a); a.click(); a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  } catch (e) { toast("CSV failed: " + e.message); }
}
new MutationObserver(() => document.querySelectorAll("#view table.list").forEach(decorate))
  .observe($("#view"), { childList: true, subtree: true });

start().catch(e => { if (token()) showLogin(e.message); });
