// The training runs here, off the page's thread: MicroPython-webassembly (the npm runtime that
// `microrl web` serves under runtime/) with the device core and our wasm kernels (engine.js),
// driven by webtrain.py; its reports go to the page as they come.
import { startEngine } from "./engine.js";

let mp = null;
globalThis.report = (text) => postMessage(JSON.parse(text));
const fail = (err) => postMessage({ kind: "error", message: String((err && err.message) || err) });

async function boot(useKernels) {
  const t0 = performance.now();
  const [{ loadMicroPython }, files, kernels, manifest] = await Promise.all([
    import("./runtime/micropython.mjs"),
    fetch("files.json").then((r) => r.json()),
    useKernels ? fetch("microrl_kernels.wasm").then((r) => r.arrayBuffer()) : null,
    fetch("microrl_kernels.json").then((r) => r.json()),
  ]);
  const engine = await startEngine({
    loadMicroPython, files, kernels, kernelsHash: manifest.source_hash,
    runtimeUrl: new URL("runtime/micropython.wasm", self.location).href,
    stdout: (text) => postMessage({ kind: "stdout", text }),
    stderr: (text) => postMessage({ kind: "stdout", text }),
  });
  mp = engine.mp;
  mp.runPython("import webtrain");
  postMessage({ kind: "ready", backend: engine.backend, ms: performance.now() - t0 });
}

// the page's numbers, checked there, as a Python call
const int = (v) => String(Math.trunc(Number(v)));
function trainCall(o) {
  const args = ["steps=" + int(o.steps), "seed=" + int(o.seed), "eval_every=" + int(o.eval_every), "eval_episodes=" + int(o.eval_episodes)];
  if (o.hidden) args.push("hidden=(" + o.hidden.map(int).join(", ") + ",)");
  if (o.batch) args.push("batch=" + int(o.batch));
  if (o.warmup !== undefined && o.warmup !== null) args.push("warmup=" + int(o.warmup));
  return "webtrain.train(" + args.join(", ") + ")";
}

onmessage = (event) => {
  const m = event.data;
  try {
    if (m.type === "boot") boot(m.kernels).catch(fail);
    else if (m.type === "train") mp.runPython(trainCall(m.options));
    else if (m.type === "fly") {
      mp.FS.writeFile("/tmp/dropped.mrlp", new Uint8Array(m.bytes));
      mp.runPython("webtrain.fly('/tmp/dropped.mrlp')");
    }
  } catch (err) {
    fail(err);
  }
};
