// avdnn serve's page: plain JS, no build step, nothing fetched but this service's own API.
// Every text from the API goes in through textContent or an attribute, never innerHTML;
// the URLs shown are the redacted ones the API returns.
"use strict";

const POLL_MS = 1000; // counters refresh
const HISTORY_S = 300; // seconds of samples a chart shows (the service keeps them: .../history)
const SAMPLE_S = 1; // seconds between two of the service's samples
const MAX_LIVE = 4; // live MJPEG previews at once (a browser opens ~6 connections per host)
const MAX_EVENTS = 50; // events kept in the list
const PREVIEW_FPS = 5;
const EVENT_TYPES = ["new", "update", "end", "enter", "exit", "loiter", "cross"];
const SERIES = [
  { key: "fps", label: "fps", color: "#2b7bb9" },
  { key: "drops", label: "drops/s", color: "#c0392b" },
  { key: "p95", label: "p95 ms", color: "#8e44ad" },
];

const cards = new Map(); // pipeline id -> {root, fields, sources: Map(source id -> card)}
// "pid/sid" -> {samples: [{t, fps, drops (since the sample before), p95}], dropped (the last poll's
// total), loaded (samples the service had when the source was first shown)}
const history = new Map();
let events = null; // the EventSource, opened after the first answer of the API
let timer = null;

const enc = encodeURIComponent;
const $ = (id) => document.getElementById(id);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (name === "text") node.textContent = value;
    else node.setAttribute(name, value);
  }
  for (const child of children) node.append(child);
  return node;
}

class HttpError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

function detailOf(body, status) {
  const detail = body && body.detail;
  if (Array.isArray(detail)) return detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("; ");
  return detail ? String(detail) : `HTTP ${status}`;
}

async function api(method, path, body, headers = {}) {
  const init = { method, headers: { ...headers }, credentials: "same-origin" };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  const response = await fetch(path, init);
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch (err) {
    data = null;
  }
  if (!response.ok) throw new HttpError(response.status, detailOf(data, response.status));
  return data;
}

function setStatus(text, bad = false) {
  const status = $("status");
  status.textContent = text;
  status.classList.toggle("error", bad);
}

// -- polling ----------------------------------------------------------------------------------

async function poll() {
  clearTimeout(timer);
  try {
    const list = await api("GET", "api/pipelines");
    const details = await Promise.all(
      list.pipelines.map((p) => api("GET", `api/pipelines/${enc(p.id)}`).catch(() => null)),
    );
    const shown = details.filter((d) => d !== null);
    await loadHistories(shown);
    render(shown);
    setStatus(`${list.pipelines.length} pipeline(s), updated ${new Date().toLocaleTimeString()}`);
    if (events === null) openEvents();
  } catch (err) {
    if (err instanceof HttpError && err.status === 401) {
      showLogin();
      return; // polling starts again once signed in
    }
    setStatus(`the service does not answer: ${err.message}`, true);
  }
  timer = setTimeout(poll, POLL_MS);
}

// A source shown for the first time starts its chart with the service's samples of the last
// minutes; the polls then append to it.
async function loadHistories(pipelines) {
  const fresh = [];
  for (const p of pipelines) {
    for (const s of p.sources) {
      if (!s.departed && !history.has(`${p.id}/${s.id}`)) fresh.push([p.id, s.id]);
    }
  }
  await Promise.all(
    fresh.map(async ([pid, sid]) => {
      let samples = [];
      try {
        const body = await api("GET", `${previewBase(pid, sid)}/history?seconds=${HISTORY_S}`);
        const shift = Date.now() / 1000 - body.now; // the service's clock to this browser's
        samples = body.samples.map((x) => ({ t: x.t + shift, fps: x.fps, drops: x.dropped, p95: x.p95 }));
      } catch (err) {
        samples = []; // gone meanwhile: the next poll drops its card, or starts an empty chart
      }
      history.set(`${pid}/${sid}`, { samples, dropped: null, loaded: samples.length });
    }),
  );
}

function render(pipelines) {
  const seen = new Set();
  let live = 0;
  for (const p of pipelines) {
    seen.add(p.id);
    const card = cards.get(p.id) || addPipeline(p);
    card.fields.state.textContent = p.state;
    card.root.dataset.state = p.state;
    card.fields.cause.textContent = p.cause || "";
    const ended = p.state === "ended" || p.state === "failed";
    const current = p.sources.filter((s) => !s.departed);
    const ids = new Set(current.map((s) => s.id));
    for (const [sid, sc] of card.sources) {
      if (!ids.has(sid)) {
        dropPreview(sc);
        sc.root.remove();
        card.sources.delete(sid);
        history.delete(`${p.id}/${sid}`);
      }
    }
    for (const s of current) {
      const sc = card.sources.get(s.id) || addSource(card, p, s);
      updateSource(sc, p, s, ended);
      if (!ended && live < MAX_LIVE) {
        live += 1;
        showLive(sc, p.id, s.id);
      } else if (!ended) {
        showSnapshot(sc, p.id, s.id);
      } else {
        dropPreview(sc);
      }
    }
  }
  for (const [pid, card] of cards) {
    if (!seen.has(pid)) {
      for (const [sid, sc] of card.sources) {
        dropPreview(sc);
        history.delete(`${pid}/${sid}`);
      }
      card.root.remove();
      cards.delete(pid);
    }
  }
  $("no-pipelines").hidden = cards.size > 0;
  fillPipelineChoice(pipelines);
}

function addPipeline(p) {
  const fields = { state: el("span", { class: "state" }), cause: el("p", { class: "error cause" }) };
  const list = el("div", { class: "sources" });
  const root = el(
    "article",
    { class: "pipeline", "data-pipeline": p.id },
    el("h2", {}, el("span", { class: "pid", text: p.id }), " ", el("span", { class: "kind", text: p.kind }), " ", fields.state),
    fields.cause,
    list,
  );
  $("pipelines").append(root);
  const card = { root, fields, list, sources: new Map() };
  cards.set(p.id, card);
  return card;
}

const COUNTERS = [
  ["state", (s) => s.state],
  ["fps", (s) => s.fps.toFixed(1)],
  ["read", (s) => s.frames.read],
  ["written", (s) => s.frames.written],
  ["dropped", (s) => s.frames.dropped],
  ["failed", (s) => s.frames.failed],
  ["p50", (s) => ms(s.latency.p50)],
  ["p95", (s) => ms(s.latency.p95)],
  ["reconnects", (s) => s.reconnects],
  ["restarts", (s) => Object.values(s.restarts || {}).reduce((a, b) => a + b, 0)],
];

function ms(seconds) {
  return seconds === null || seconds === undefined ? "–" : `${Math.round(seconds * 1000)} ms`;
}

function addSource(card, p, s) {
  const values = {};
  const list = el("dl", { class: "counters" });
  for (const [name] of COUNTERS) {
    values[name] = el("dd", { "data-field": name });
    list.append(el("dt", { text: name }), values[name]);
  }
  const img = el("img", { class: "preview", alt: `preview of ${s.id}`, width: "320" });
  const canvas = el("canvas", { class: "chart", width: "320", height: "80" });
  const legend = el("p", { class: "legend" });
  const remove = el("button", { type: "button", class: "remove", text: "Remove" });
  remove.addEventListener("click", () => removeSource(p.id, s.id, remove));
  const root = el(
    "div",
    { class: "source", "data-source": s.id },
    el("h3", {}, el("span", { class: "sid", text: s.id }), " ", el("span", { class: "url", text: s.url })),
    img,
    list,
    canvas,
    legend,
    el("p", { class: "error cause" }),
    remove,
  );
  card.list.append(root);
  const sc = { root, values, img, canvas, legend, remove, mode: null };
  card.sources.set(s.id, sc);
  return sc;
}

function updateSource(sc, p, s, ended) {
  for (const [name, value] of COUNTERS) sc.values[name].textContent = String(value(s));
  sc.root.dataset.state = s.state;
  sc.root.querySelector(".cause").textContent = s.cause || "";
  sc.remove.hidden = ended || p.kind !== "template";
  const key = `${p.id}/${s.id}`;
  const kept = history.get(key) || { samples: [], dropped: null, loaded: 0 };
  const now = Date.now() / 1000;
  const drops = kept.dropped === null ? 0 : Math.max(0, s.frames.dropped - kept.dropped);
  kept.dropped = s.frames.dropped;
  const samples = kept.samples;
  samples.push({ t: now, fps: s.fps, drops, p95: s.latency.p95 });
  while (samples.length && samples[0].t < now - HISTORY_S) samples.shift();
  history.set(key, kept);
  sc.canvas.dataset.history = String(kept.loaded);
  drawChart(sc, samples);
}

// -- previews ---------------------------------------------------------------------------------

function previewBase(pid, sid) {
  return `api/pipelines/${enc(pid)}/sources/${enc(sid)}`;
}

function showLive(sc, pid, sid) {
  if (sc.mode === "live") return;
  sc.mode = "live";
  sc.img.src = `${previewBase(pid, sid)}/preview.mjpg?fps=${PREVIEW_FPS}`;
}

function showSnapshot(sc, pid, sid) {
  sc.mode = "snapshot"; // beyond MAX_LIVE: a still refreshed at each poll
  sc.img.src = `${previewBase(pid, sid)}/snapshot.jpg?t=${Date.now()}`;
}

function dropPreview(sc) {
  if (sc.mode === null) return;
  sc.mode = null;
  sc.img.removeAttribute("src"); // ends the MJPEG stream's connection
}

// -- charts -----------------------------------------------------------------------------------

function seriesOf(samples) {
  const out = { fps: [], drops: [], p95: [] };
  for (let i = 0; i < samples.length; i += 1) {
    const s = samples[i];
    const prev = samples[i - 1];
    const dt = prev ? s.t - prev.t : SAMPLE_S;
    out.fps.push([s.t, s.fps]);
    out.drops.push([s.t, dt > 0 ? s.drops / dt : 0]);
    out.p95.push([s.t, s.p95 === null || s.p95 === undefined ? 0 : s.p95 * 1000]);
  }
  return out;
}

function drawChart(sc, samples) {
  const ctx = sc.canvas.getContext("2d");
  const { width, height } = sc.canvas;
  ctx.clearRect(0, 0, width, height);
  ctx.strokeStyle = "#ddd";
  ctx.strokeRect(0.5, 0.5, width - 1, height - 1);
  const now = Date.now() / 1000;
  sc.canvas.dataset.points = String(samples.length); // what the tests read: points drawn per line
  const series = seriesOf(samples);
  const legend = [];
  for (const { key, label, color } of SERIES) {
    const points = series[key];
    const top = Math.max(1e-9, ...points.map((pt) => pt[1]));
    ctx.strokeStyle = color;
    ctx.lineWidth = 1.5;
    ctx.beginPath();
    points.forEach(([t, v], i) => {
      const x = width - ((now - t) / HISTORY_S) * width;
      const y = height - 3 - (v / top) * (height - 6);
      if (i === 0) ctx.moveTo(x, y);
      else ctx.lineTo(x, y);
    });
    ctx.stroke();
    const last = points.length ? points[points.length - 1][1] : 0;
    legend.push(`${label} ${last.toFixed(1)} (max ${top < 1e-6 ? 0 : top.toFixed(1)})`);
  }
  sc.legend.textContent = `last ${HISTORY_S / 60} min: ${legend.join(" · ")}`;
}

// -- adding and removing sources ---------------------------------------------------------------

function fillPipelineChoice(pipelines) {
  const select = $("add-pipeline");
  const wanted = pipelines.filter((p) => p.kind === "template" && p.state !== "ended" && p.state !== "failed");
  const have = Array.from(select.options).map((o) => o.value);
  if (have.join("\n") === wanted.map((p) => p.id).join("\n")) return;
  const chosen = select.value;
  select.replaceChildren(...wanted.map((p) => el("option", { value: p.id, text: p.id })));
  if (wanted.some((p) => p.id === chosen)) select.value = chosen;
}

async function submitSource(event) {
  event.preventDefault();
  const pid = $("add-pipeline").value;
  const body = { id: $("add-id").value.trim(), url: $("add-url").value.trim() };
  $("add-error").textContent = "";
  if (!pid) {
    $("add-error").textContent = "no template pipeline to add a source to";
    return;
  }
  try {
    await api("POST", `api/pipelines/${enc(pid)}/sources`, body);
    $("add-id").value = "";
    $("add-url").value = "";
  } catch (err) {
    $("add-error").textContent = err.message;
  }
  poll();
}

async function removeSource(pid, sid, button) {
  button.disabled = true;
  try {
    await api("DELETE", `api/pipelines/${enc(pid)}/sources/${enc(sid)}`);
  } catch (err) {
    setStatus(`removing ${sid}: ${err.message}`, true);
    button.disabled = false;
  }
  poll();
}

// -- events -----------------------------------------------------------------------------------

function openEvents() {
  // the latest events so far first; a reconnection (Last-Event-ID) gets only those it missed
  events = new EventSource(`api/events?backlog=${MAX_EVENTS}`, { withCredentials: true });
  const onEvent = (message) => {
    let data;
    try {
      data = JSON.parse(message.data);
    } catch (err) {
      return;
    }
    const e = data.event || {};
    const what = [e.type, `#${e.track_id}`, e.label, e.zone && `zone ${e.zone}`, e.line && `line ${e.line} ${e.direction}`]
      .filter(Boolean)
      .join(" ");
    const item = el(
      "li",
      { "data-type": String(e.type), "data-pipeline": String(data.pipeline), "data-source": String(data.source) },
      el("time", { text: typeof e.time === "number" ? `${e.time.toFixed(1)} s` : "" }), // stream time
      " ",
      el("span", { class: "where", text: `${data.pipeline}/${data.source}` }),
      " ",
      el("span", { class: "what", text: what }),
    );
    const list = $("events");
    list.prepend(item);
    while (list.children.length > MAX_EVENTS) list.lastElementChild.remove();
  };
  for (const type of [...EVENT_TYPES, "message"]) events.addEventListener(type, onEvent);
  events.addEventListener("error", () => {
    if (events.readyState === EventSource.CLOSED) {
      events = null; // refused (signed out): opened again after the next good poll
    }
  });
}

// -- signing in -------------------------------------------------------------------------------

// Opened as /?token=... (the URL avdnn serve prints): the token leaves the address bar, and so the
// browser's history, at once, then is traded for the session cookie.
async function signInFromAddress() {
  const params = new URLSearchParams(window.location.search);
  const token = params.get("token");
  if (token === null) return;
  params.delete("token");
  const rest = params.toString();
  window.history.replaceState(null, "", window.location.pathname + (rest ? `?${rest}` : "") + window.location.hash);
  try {
    await api("POST", "api/session", undefined, { Authorization: `Bearer ${token}` });
  } catch (err) {
    $("login-error").textContent = err.status === 401 ? "the token in the address is not this service's" : err.message;
  }
}

function showLogin() {
  $("login").hidden = false;
  setStatus("this service needs its token", true);
  $("login-token").focus();
}

async function signIn(event) {
  event.preventDefault();
  const token = $("login-token").value;
  $("login-error").textContent = "";
  try {
    await api("POST", "api/session", undefined, { Authorization: `Bearer ${token}` });
  } catch (err) {
    $("login-error").textContent = err.status === 401 ? "wrong token" : err.message;
    return;
  }
  $("login-token").value = "";
  $("login").hidden = true;
  for (const card of cards.values()) for (const sc of card.sources.values()) dropPreview(sc);
  poll();
}

window.addEventListener("DOMContentLoaded", async () => {
  $("add-source").addEventListener("submit", submitSource);
  $("login").addEventListener("submit", signIn);
  await signInFromAddress();
  poll();
});
