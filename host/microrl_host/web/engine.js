// Starts MicroPython's webassembly port with the device core (device/microrl) in its file system
// and, when given, our kernels (microrl_kernels.wasm) instantiated on MicroPython's own memory,
// so that Python passes array addresses to them (microrl_kernels.py). Runs in a browser worker
// and under node (bench, tests).

// The memory of the MicroPython instance: the emscripten build does not export it, so the one
// instantiation this call makes is watched for the module's exported memory.
async function loadWithMemory(loadMicroPython, options) {
  let memory = null;
  const keep = (result) => {
    const instance = result.instance || result;
    if (!memory && instance.exports && instance.exports.memory instanceof WebAssembly.Memory) memory = instance.exports.memory;
    return result;
  };
  const instantiate = WebAssembly.instantiate;
  const streaming = WebAssembly.instantiateStreaming;
  WebAssembly.instantiate = (...args) => instantiate.apply(WebAssembly, args).then(keep);
  if (streaming) WebAssembly.instantiateStreaming = (...args) => streaming.apply(WebAssembly, args).then(keep);
  try {
    const mp = await loadMicroPython(options);
    return { mp, memory };
  } finally {
    WebAssembly.instantiate = instantiate;
    if (streaming) WebAssembly.instantiateStreaming = streaming;
  }
}

// files: {path: text} written under /lib (the device core, the kernels' module, the driver);
// kernels: the bytes of microrl_kernels.wasm, or null for the plain Python kernels.
export async function startEngine({ loadMicroPython, runtimeUrl, files, kernels, kernelsHash, stdout, stderr, heapsize }) {
  const { mp, memory } = await loadWithMemory(loadMicroPython, {
    url: runtimeUrl, heapsize: heapsize || 32 * 1024 * 1024, stdout, stderr,
  });
  for (const [path, text] of Object.entries(files)) {
    if (path === "microrl_kernels.py" && !kernels) continue;  // plain: no native module to find
    const full = "/lib/" + path;
    mp.FS.mkdirTree(full.slice(0, full.lastIndexOf("/")));
    mp.FS.writeFile(full, text);
  }
  let backend = "plain";
  if (kernels) {
    if (!memory) throw new Error("MicroPython's memory was not found: the wasm kernels cannot share it");
    const { instance } = await WebAssembly.instantiate(kernels, { env: { memory } });
    globalThis.microrlKernels = Object.assign({ source_hash: kernelsHash || "" }, instance.exports);
    backend = "native";
  }
  mp.runPython("import sys\nsys.path.insert(0, '/lib')\nimport microrl.backend\nmicrorl.backend.use(" + JSON.stringify(backend) + ")");
  return { mp, backend };
}
