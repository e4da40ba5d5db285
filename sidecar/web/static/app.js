// sidecar's web view: the session list, one session's detail, and its follow-up actions, kept
// live by the server's change feed (GET /api/events). Plain JavaScript, served as it is: no
// build step, nothing fetched from elsewhere (the page's CSP is `default-src 'self'`).
//
// Every text from the server is set as text (textContent), never as HTML: session texts come
// from hosts, prompts' files and other machines.
"use strict";

(function () {
  const PAGE = 200; // rows a page
  const SEARCH_PAUSE = 150; // ms of no typing before the list is asked for again
  const STATE_CLASS = { working: "st-working", waiting: "st-waiting", idle: "st-idle",
                        limited: "st-limited", ended: "st-ended" };
  const WAITING_FOLLOW_UP = new Set(["queued", "postponed"]);
  const csrf = document.querySelector('meta[name="csrf-token"]').content;
  const $ = (id) => document.getElementById(id);

  const view = {
    q: "", state: "", offset: 0,
    open: null, // the key of the session whose detail is shown
    list: null, // the last /api/sessions answer
    clockOffset: 0, // the server's clock less this one's, in ms: countdowns use the server's time
    listAsked: 0, listBusy: false, listAgain: false,
    detailBusy: false, detailAgain: false,
  };

  // -- words, as the terminal views say them (sidecar/base/words.py) -------------------------

  function now() { return (Date.now() + view.clockOffset) / 1000; }
  function seconds(iso) { return iso ? Date.parse(iso) / 1000 : null; }

  function span(s) {
    s = Math.abs(s);
    if (s < 60) return Math.floor(s) + " s";
    if (s < 3600) return Math.floor(s / 60) + " min";
    if (s < 86400) {
      const minutes = Math.floor(s / 60), h = Math.floor(minutes / 60), m = minutes % 60;
      return h + " h" + (m && h < 10 ? " " + m + " min" : "");
    }
    const days = Math.floor(s / 86400);
    return days + (days === 1 ? " day" : " days");
  }

  function ago(ts, at) {
    if (ts === null) return "-";
    if (ts >= at + 1) return "in " + span(ts - at);
    return at - ts < 1 ? "just now" : span(at - ts) + " ago";
  }

  function due(ts, at) { return ts === null || ts < at + 1 ? "due now" : "due in " + span(ts - at); }

  function followUpWords(item, at) {
    const ts = seconds(item.at);
    if (WAITING_FOLLOW_UP.has(item.state)) {
      return item.hookId + " " + (item.state === "postponed" ? "postponed, " : "") + due(ts, at);
    }
    if (item.state === "running") return item.hookId + " running";
    return item.hookId + " " + item.state + " " + ago(ts, at);
  }

  function shownFollowUps(row) {
    const items = row.followUps || [];
    const live = items.filter((f) => WAITING_FOLLOW_UP.has(f.state) || f.state === "running");
    return live.length ? live : items.slice(0, 1);
  }

  function failed(state) { return typeof state === "string" && state.startsWith("error"); }

  function tokens(figures) {
    if (!figures) return "-";
    const total = Object.values(figures).reduce((a, b) => a + (Number.isInteger(b) ? b : 0), 0);
    if (!total) return "-";
    if (total >= 1e6) return (total / 1e6).toFixed(1) + "M";
    if (total >= 1e3) return (total / 1e3).toFixed(1) + "k";
    return String(total);
  }

  function baseName(path) { return path.replace(/\/+$/, "").split("/").pop() || path; }
  function shortId(id) { return id.length > 12 ? id.slice(0, 12) : id; }
  function counted(n, word) { return n + " " + word + (n === 1 ? "" : "s"); }

  // -- elements -------------------------------------------------------------------------------

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  // A time that goes on changing: drawn again each second from its moment (data-at) and kind.
  function liveTime(node, kind, iso, prefix) {
    node.dataset.at = iso || "";
    node.dataset.kind = kind;
    node.dataset.prefix = prefix || "";
    drawTime(node, now());
    return node;
  }

  function drawTime(node, at) {
    const ts = node.dataset.at ? seconds(node.dataset.at) : null;
    const words = node.dataset.kind === "due" ? due(ts, at) : ago(ts, at);
    node.textContent = node.dataset.prefix + words;
  }

  function followUpCell(row, cell) {
    const items = shownFollowUps(row);
    if (!items.length) { cell.textContent = "-"; cell.classList.add("none"); return; }
    items.forEach((item, i) => {
      if (i) cell.append(", ");
      const part = el("span");
      if (WAITING_FOLLOW_UP.has(item.state)) {
        const word = item.hookId + " " + (item.state === "postponed" ? "postponed, " : "");
        liveTime(part, "due", item.at, word);
      } else if (item.state === "running") {
        part.textContent = item.hookId + " running";
      } else {
        liveTime(part, "ago", item.at, item.hookId + " " + item.state + " ");
        if (failed(item.state)) part.className = "error";
        else if (item.state.startsWith("skipped")) part.className = "skipped";
      }
      cell.append(part);
    });
  }

  function rowElement(row) {
    const tr = el("tr");
    tr.dataset.key = row.key;
    tr.tabIndex = 0;
    if (row.key === view.open) tr.className = "selected";
    const stale = !!(row.machine && view.unreachable && view.unreachable.has(row.machine));
    const cells = [
      ["c-machine", row.machine || "this machine"],
      ["c-host", row.host],
      ["c-workspace", baseName(row.workspace)],
      ["c-session", row.sessionId],
      ["c-state", stale ? "unreachable" : row.stateWords],
      ["c-why", row.whyWords],
    ];
    for (const [cls, text] of cells) {
      const td = el("td", text, cls);
      if (cls === "c-state") td.classList.add(stale ? "st-ended" : STATE_CLASS[row.state] || "");
      if (cls === "c-workspace") td.title = row.workspace;
      if (cls === "c-session") td.title = row.sessionId;
      tr.append(td);
    }
    tr.append(liveTime(el("td", null, "c-last"), "ago", row.lastActivityAt));
    tr.append(el("td", tokens(row.tokens), "c-tokens"));
    tr.append(el("td", row.costWords, "c-cost"));
    const follow = el("td", null, "c-follow");
    followUpCell(row, follow);
    tr.append(follow);
    return tr;
  }

  // -- the list -------------------------------------------------------------------------------

  async function api(path, options) {
    const answer = await fetch(path, Object.assign({ credentials: "same-origin" }, options || {}));
    if (answer.status === 401) {
      showProblem("Not signed in (401): open the address `sidecar web` printed, with its token.");
      throw new Error("401");
    }
    let body = null;
    try { body = await answer.json(); } catch (e) { body = null; }
    return { status: answer.status, ok: answer.ok, body: body };
  }

  function showProblem(text) {
    const p = $("problem");
    p.textContent = text;
    p.hidden = !text;
  }

  function listAddress() {
    const params = new URLSearchParams({ offset: String(view.offset), limit: String(PAGE) });
    if (view.q) params.set("q", view.q);
    if (view.state) params.set("state", view.state);
    return "/api/sessions?" + params.toString();
  }

  // One request at a time; a change that arrives meanwhile asks once more when it is answered.
  async function loadList() {
    if (view.listBusy) { view.listAgain = true; return; }
    view.listBusy = true;
    try {
      do {
        view.listAgain = false;
        const answer = await api(listAddress());
        if (!answer.ok || !answer.body) {
          showProblem("The list could not be read: " + ((answer.body && answer.body.error) || answer.status));
          continue;
        }
        if (view.listAgain) continue; // already out of date: the newer answer is drawn instead
        showProblem("");
        drawList(answer.body);
      } while (view.listAgain);
    } catch (e) {
      if (e.message !== "401") showProblem("The server cannot be reached: " + e.message);
    } finally {
      view.listBusy = false;
    }
  }

  function drawList(data) {
    view.list = data;
    view.clockOffset = Date.parse(data.now) - Date.now();
    view.unreachable = new Set((data.machines || []).filter((m) => !m.reachable).map((m) => m.name));
    const fleet = data.sessions.some((row) => row.machine) || (data.machines || []).length > 1;
    document.body.classList.toggle("fleet", fleet);
    const body = $("rows");
    const rows = document.createDocumentFragment();
    for (const row of data.sessions) rows.append(rowElement(row));
    body.replaceChildren(rows);
    $("empty").hidden = data.sessions.length > 0;
    drawHeader(data);
    drawPager(data);
    drawNotes(data);
    if (!view.drawn) performance.mark("sidecar:list-drawn"); // the first page's time (bench/bench_web.py)
    view.drawn = true;
  }

  function drawHeader(data) {
    const c = data.counts;
    const shown = data.matched === data.total ? counted(data.total, "session")
      : data.matched + " of " + counted(data.total, "session");
    const counts = $("counts");
    counts.replaceChildren(
      el("span", c.waiting + " waiting", c.waiting ? "st-waiting" : ""), " · ",
      el("span", c.working + " working", c.working ? "st-working" : ""), " · ",
      el("span", c.limited + " at a usage limit", c.limited ? "st-limited" : ""), " · ",
      el("span", c.idle + " idle"), " · ",
      el("span", counted(c.queued, "follow-up") + " queued"), " · ",
      el("span", shown, "shown"));
    document.title = c.waiting ? "(" + c.waiting + " waiting) sidecar" : "sidecar"; // seen from another tab
    const next = $("next-due");
    next.replaceChildren();
    if (data.nextDue) {
      const row = data.sessions.find((r) => r.key === data.nextDue.key);
      next.append("next: ", el("span", data.nextDue.hookId, "hook"), " ",
                  liveTime(el("span", null, "when"), "due", data.nextDue.at),
                  row ? " (" + shortId(row.sessionId) + ")" : "");
    }
  }

  function drawPager(data) {
    const first = data.matched ? view.offset + 1 : 0;
    const last = Math.min(view.offset + PAGE, data.matched);
    $("page-words").textContent = first + "–" + last + " of " + data.matched;
    $("prev").disabled = view.offset === 0;
    $("next").disabled = last >= data.matched;
    $("pager").hidden = data.matched <= PAGE && view.offset === 0;
  }

  function drawNotes(data) {
    const errors = $("errors");
    errors.replaceChildren(...(data.errors || []).map((text) => el("li", text)));
    errors.hidden = !(data.errors || []).length;
    const machines = $("machines");
    const away = (data.machines || []).filter((m) => !m.reachable);
    machines.replaceChildren(...away.map((m) => {
      const li = el("li", null, "error");
      li.append(m.name + " unreachable since ");
      li.append(m.unreachableSince ? liveTime(el("span"), "ago", m.unreachableSince) : "—");
      return li;
    }));
    machines.hidden = !away.length;
  }

  // -- the detail -----------------------------------------------------------------------------

  function keyFromHash() {
    const found = /^#session=([A-Za-z0-9_-]+)$/.exec(location.hash);
    return found ? found[1] : null;
  }

  function selectRow() {
    for (const tr of $("rows").children) tr.classList.toggle("selected", tr.dataset.key === view.open);
  }

  function openFromHash() {
    const key = keyFromHash();
    if (key === view.open) return;
    view.open = key;
    $("d-said").hidden = true;
    selectRow();
    document.body.classList.toggle("has-detail", key !== null);
    $("detail").hidden = key === null;
    if (key !== null) loadDetail();
  }

  async function loadDetail() {
    if (view.detailBusy) { view.detailAgain = true; return; }
    view.detailBusy = true;
    try {
      do {
        view.detailAgain = false;
        const key = view.open;
        if (key === null) break;
        const answer = await api("/api/session?key=" + encodeURIComponent(key));
        if (key !== view.open || view.detailAgain) continue;
        if (answer.status === 404) { $("d-gone").hidden = false; drawActions(null); continue; }
        if (!answer.ok || !answer.body) {
          showProblem("The session could not be read: " + ((answer.body && answer.body.error) || answer.status));
          continue;
        }
        $("d-gone").hidden = true;
        drawDetail(answer.body);
      } while (view.detailAgain);
    } catch (e) {
      if (e.message !== "401") showProblem("The server cannot be reached: " + e.message);
    } finally {
      view.detailBusy = false;
    }
  }

  function fact(list, term, value, cls) {
    const dd = el("dd", null, cls);
    if (value instanceof Node) dd.append(value); else dd.textContent = value === null || value === undefined || value === "" ? "-" : String(value);
    list.append(el("dt", term), dd);
    return dd;
  }

  function drawDetail(data) {
    const row = data.session;
    $("d-title").textContent = row.host + " · " + baseName(row.workspace) + " · " + row.sessionId;
    const facts = $("d-facts");
    facts.replaceChildren();
    fact(facts, "state", row.stateWords, STATE_CLASS[row.state]);
    fact(facts, "why", row.whyWords);
    if (row.endedWhy) fact(facts, "ended", row.endedWhy);
    fact(facts, "machine", data.where || "this machine");
    fact(facts, "host", row.host);
    fact(facts, "workspace", row.workspace);
    if (row.cwd && row.cwd !== row.workspace) fact(facts, "folder", row.cwd);
    fact(facts, "session", row.sessionId);
    fact(facts, "started", liveTime(el("span"), "ago", row.startedAt));
    fact(facts, "last activity", liveTime(el("span"), "ago", row.lastActivityAt));
    const figures = row.tokens ? Object.entries(row.tokens).map(([k, v]) => k + " " + v).join(", ") : "";
    fact(facts, "tokens", figures ? tokens(row.tokens) + " (" + figures + ")" : "-");
    fact(facts, "cost", row.costWords);

    const follow = $("d-follow");
    follow.replaceChildren(...data.followUps.map((item) => {
      const li = el("li");
      const words = el("span", null, "words");
      if (WAITING_FOLLOW_UP.has(item.state)) {
        liveTime(words, "due", item.at, item.hookId + " " + (item.state === "postponed" ? "postponed, " : ""));
      } else {
        words.textContent = followUpWords(item, now());
        if (failed(item.state)) words.classList.add("error");
        else if (item.state.startsWith("skipped")) words.classList.add("skipped");
      }
      li.append(words);
      if (item.log && item.log.length) li.append(el("pre", item.log.join("\n"), failed(item.state) ? "log error" : "log"));
      return li;
    }));
    $("d-no-follow").hidden = data.followUps.length > 0;
    drawActions(row);

    $("d-elsewhere").hidden = data.timeline !== null;
    const timeline = $("d-timeline");
    timeline.replaceChildren(...(data.timeline || []).slice().reverse().map((entry) => {
      const li = el("li");
      // a message that only says the event again ("turn-end" for turn.end) is left out
      const same = entry.message.replace(/[-_]/g, ".") === entry.event;
      li.append(liveTime(el("span", null, "when"), "ago", entry.at), " ",
                el("span", entry.event, "event"), " ", el("span", same ? "" : entry.message, "message"));
      return li;
    }));
  }

  function drawActions(row) {
    $("act-cancel").hidden = !(row && row.canCancel);
    $("act-fire").hidden = !(row && row.canFire);
    $("act-retry").hidden = !(row && row.canRetry);
  }

  async function act(what, button) {
    const said = $("d-said");
    button.disabled = true;
    try {
      const answer = await api("/api/act", {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-CSRF-Token": csrf },
        body: JSON.stringify({ key: view.open, what: what }),
      });
      const body = answer.body || {};
      said.textContent = body.said || body.error || "The server answered " + answer.status + ".";
      said.className = body.said ? "said" : "said error";
      said.hidden = false;
    } catch (e) {
      if (e.message !== "401") { said.textContent = "Not sent: " + e.message; said.className = "said error"; said.hidden = false; }
    } finally {
      button.disabled = false;
      loadDetail();
      loadList();
    }
  }

  // -- live -----------------------------------------------------------------------------------

  function follow() {
    const live = $("live");
    const events = new EventSource("/api/events");
    events.addEventListener("open", () => { live.textContent = "live"; live.className = "live on"; });
    events.addEventListener("error", () => { live.textContent = "reconnecting…"; live.className = "live off"; });
    events.addEventListener("change", (event) => {
      let change = {};
      try { change = JSON.parse(event.data); } catch (e) { change = { all: true }; }
      loadList();
      if (view.open !== null && (change.all || (change.keys || []).includes(view.open))) loadDetail();
    });
  }

  function tick() {
    const at = now();
    for (const node of document.querySelectorAll("[data-kind]")) drawTime(node, at);
  }

  // -- wiring ---------------------------------------------------------------------------------

  function wire() {
    let typing = 0;
    $("filters").addEventListener("submit", (event) => event.preventDefault());
    $("q").addEventListener("input", () => {
      clearTimeout(typing);
      typing = setTimeout(() => { view.q = $("q").value.trim(); view.offset = 0; loadList(); }, SEARCH_PAUSE);
    });
    $("state").addEventListener("change", () => { view.state = $("state").value; view.offset = 0; loadList(); });
    $("prev").addEventListener("click", () => { view.offset = Math.max(0, view.offset - PAGE); loadList(); });
    $("next").addEventListener("click", () => { view.offset += PAGE; loadList(); });
    const choose = (target) => {
      const tr = target.closest("tr[data-key]");
      if (tr) location.hash = "session=" + tr.dataset.key;
    };
    $("rows").addEventListener("click", (event) => choose(event.target));
    $("rows").addEventListener("keydown", (event) => { if (event.key === "Enter") choose(event.target); });
    $("close").addEventListener("click", () => {
      history.pushState(null, "", location.pathname + location.search);
      openFromHash();
    });
    for (const id of ["act-cancel", "act-fire", "act-retry"]) {
      const button = $(id);
      button.addEventListener("click", () => act(button.dataset.what, button));
    }
    // top's keys where they mean the same: `/` to search, Escape to close the session
    document.addEventListener("keydown", (event) => {
      const typing = event.target instanceof HTMLInputElement || event.target instanceof HTMLSelectElement;
      if (event.key === "/" && !typing) { event.preventDefault(); $("q").focus(); }
      else if (event.key === "Escape" && view.open !== null) $("close").click();
    });
    window.addEventListener("hashchange", openFromHash);
    window.addEventListener("popstate", openFromHash);
  }

  wire();
  loadList();
  openFromHash();
  follow();
  setInterval(tick, 1000);
})();
