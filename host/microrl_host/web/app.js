// The page: starts the worker (worker.js), draws the task's frames and the learning curve, and
// keeps window.microrlState for whoever drives the page (tests/test_web.py, bench/browser.py).
const $ = (id) => document.getElementById(id);
const params = new URLSearchParams(location.search);
const state = (window.microrlState = {
  ready: false, backend: null, bootMs: null, episodes: [], evaluations: [], finals: [], done: null,
  flown: null, error: null, stdout: [], firstPaint: null,
});

// ---- drawing: the shapes of a task's picture() hook, in a box [-1, 1] x [-1, 1], y up
function drawShapes(canvas, shapes, caption) {
  const g = canvas.getContext("2d");
  const s = canvas.width / 2;
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.fillStyle = g.strokeStyle = "#258";
  g.lineCap = "round";
  for (const sh of shapes) {
    if (sh[0] === "line") {
      g.lineWidth = Math.max(1, sh[5] * s);
      g.beginPath();
      g.moveTo(s + sh[1] * s, s - sh[2] * s);
      g.lineTo(s + sh[3] * s, s - sh[4] * s);
      g.stroke();
    } else if (sh[0] === "disc") {
      g.beginPath();
      g.arc(s + sh[1] * s, s - sh[2] * s, Math.max(1, sh[3] * s), 0, 2 * Math.PI);
      g.fill();
    }
  }
  g.fillStyle = "#555";
  g.font = "13px system-ui";
  g.fillText(caption || "", 8, 18);
}

// frames play in real time; a newer episode waits for the one on screen to end, older ones are dropped
const player = { frames: null, caption: "", dt: 0.05, start: 0, queue: [], loop: false };
function play(frames, caption, dt, loop) {
  player.queue.push({ frames, caption, dt: dt || 0.05, loop: !!loop });
  if (player.queue.length > 1 && !player.queue[player.queue.length - 2].loop) player.queue.splice(0, player.queue.length - 1);
}
function tick(now) {
  const done = !player.frames || (now - player.start) / 1000 / player.dt >= player.frames.length;
  if (done && player.queue.length) {
    Object.assign(player, player.queue.shift(), { start: now });
    if (player.loop) player.queue.push({ frames: player.frames, caption: player.caption, dt: player.dt, loop: true });
  }
  if (player.frames) {
    const k = Math.min(player.frames.length - 1, Math.floor((now - player.start) / 1000 / player.dt));
    if (player.frames[k] !== player.shown) {  // a new frame only: the training needs the CPU more
      player.shown = player.frames[k];
      drawShapes($("scene"), player.shown, player.caption);
    }
  }
  requestAnimationFrame(tick);
}

// ---- the learning curve: training episodes (dots) and evaluations (line), return against step
function drawCurve() {
  const c = $("curve"), g = c.getContext("2d");
  const W = c.width, H = c.height, L = 52, B = 28;
  const steps = state.run ? state.run.steps : 10000;
  const lo = -1800, hi = 0;
  const X = (s) => L + (W - L - 10) * s / steps, Y = (r) => 10 + (H - B - 10) * (hi - Math.max(lo, r)) / (hi - lo);
  g.clearRect(0, 0, W, H);
  g.strokeStyle = "#ddd"; g.fillStyle = "#777"; g.font = "12px system-ui"; g.lineWidth = 1;
  for (let r = lo; r <= hi; r += 300) {
    g.beginPath(); g.moveTo(L, Y(r)); g.lineTo(W - 10, Y(r)); g.stroke(); g.fillText(String(r), 6, Y(r) + 4);
  }
  g.fillText("step " + steps, W - 80, H - 8);
  g.fillText("return", L + 4, H - 8);
  g.strokeStyle = "#6a6"; g.setLineDash([4, 4]);
  g.beginPath(); g.moveTo(L, Y(-200)); g.lineTo(W - 10, Y(-200)); g.stroke(); g.setLineDash([]);
  g.fillStyle = "#aab";
  for (const e of state.episodes) { g.beginPath(); g.arc(X(e.step), Y(e.ret), 2.5, 0, 7); g.fill(); }
  g.strokeStyle = "#258"; g.fillStyle = "#258"; g.lineWidth = 2; g.beginPath();
  state.evaluations.forEach((e, i) => (i ? g.lineTo : g.moveTo).call(g, X(e.step), Y(e.mean)));
  g.stroke();
  for (const e of state.evaluations) { g.beginPath(); g.arc(X(e.step), Y(e.mean), 4, 0, 7); g.fill(); }
}

function showStats(last) {
  const sps = last && last.ms ? (1000 * last.step / last.ms) : 0;
  const ev = state.evaluations[state.evaluations.length - 1];
  $("stats").textContent = last ? "step " + last.step + " of " + state.run.steps + " \u00b7 " + sps.toFixed(0) + " steps/s \u00b7 "
    + (last.ms / 1000).toFixed(1) + " s" + (ev ? " \u00b7 evaluation at step " + ev.step + ": " + ev.mean.toFixed(0) : "") : "";
  state.stepsPerSecond = sps;
}

// ---- the worker
const worker = new Worker("worker.js", { type: "module" });
worker.onmessage = (event) => {
  const m = event.data;
  if (m.kind === "ready") {
    Object.assign(state, { ready: true, backend: m.backend, bootMs: m.ms });
    $("status").textContent = "ready: MicroPython with " + (m.backend === "native" ? "microrl's wasm kernels" : "plain Python kernels")
      + " (" + (m.ms / 1000).toFixed(1) + " s to start)";
    $("train").disabled = false;
    if (params.get("autostart")) start();
  } else if (m.kind === "episode") {
    state.episodes.push({ step: m.step, ret: m.ret, ms: m.ms });
    play(m.frames, "training episode " + state.episodes.length + ": return " + m.ret.toFixed(0), 0.05);
    showStats(m); drawCurve();
  } else if (m.kind === "evaluation") {
    state.evaluations.push({ step: m.step, mean: m.mean, std: m.std, ms: m.ms });
    showStats(m); drawCurve();
  } else if (m.kind === "final") {
    state.finals.push(m.ret);
    play(m.frames, "trained policy: return " + m.ret.toFixed(0), 0.05, true);
  } else if (m.kind === "done") {
    state.done = m;
    $("status").textContent = "trained: " + m.steps + " steps in " + (m.ms / 1000).toFixed(1) + " s";
    $("train").disabled = false;
  } else if (m.kind === "fly") {
    state.flown = { task: m.task, ret: m.ret, steps: m.frames.length - 1 };
    player.queue = [];
    play(m.frames, m.task + ": return " + m.ret.toFixed(1), m.dt, true);
    player.frames = null;
    $("status").textContent = "flying the dropped policy on " + m.task;
  } else if (m.kind === "error") {
    state.error = m.message;
    $("status").textContent = "error: " + m.message.split("\n").slice(-2).join(" ");
  } else if (m.kind === "stdout") {
    state.stdout.push(m.text);
  }
};
worker.postMessage({ type: "boot", kernels: params.get("kernels") !== "plain" });

function numberParam(name, fallback) {
  const v = params.get(name);
  return v === null ? fallback : Number(v);
}
function start() {
  const options = {
    steps: Math.max(1, Number($("steps").value) || 10000), seed: Math.max(0, Number($("seed").value) || 0),
    eval_every: numberParam("eval_every", 2000), eval_episodes: numberParam("eval_episodes", 10),
    hidden: params.get("hidden") ? params.get("hidden").split(",").map(Number) : null,
    batch: numberParam("batch", null), warmup: numberParam("warmup", null),
  };
  Object.assign(state, { episodes: [], evaluations: [], finals: [], done: null, run: options });
  player.queue = [];  // a previous run's trained policy stops looping
  $("train").disabled = true;
  $("status").textContent = "training…";
  drawCurve();
  worker.postMessage({ type: "train", options });
}
$("train").onclick = start;
if (params.get("steps")) $("steps").value = params.get("steps");
if (params.get("seed")) $("seed").value = params.get("seed");

// ---- a dropped policy file flies in the worker
document.addEventListener("dragover", (e) => { e.preventDefault(); document.body.classList.add("dragging"); });
document.addEventListener("dragleave", () => document.body.classList.remove("dragging"));
document.addEventListener("drop", async (e) => {
  e.preventDefault();
  document.body.classList.remove("dragging");
  const file = e.dataTransfer.files[0];
  if (file) worker.postMessage({ type: "fly", bytes: await file.arrayBuffer() });
});
// tests drop a file by its bytes (base64)
window.microrlFly = (base64) => worker.postMessage({ type: "fly", bytes: Uint8Array.from(atob(base64), (c) => c.charCodeAt(0)).buffer });

// ---- first paint: the pendulum hanging, an empty curve
state.run = null;
drawShapes($("scene"), [["line", 0, 0, 0, -0.75, 0.08], ["disc", 0, 0, 0.04]], "");
drawCurve();
requestAnimationFrame(tick);
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) if (e.name === "first-contentful-paint") state.firstPaint = e.startTime;
}).observe({ type: "paint", buffered: true });
