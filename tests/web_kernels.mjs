// node web_kernels.mjs KERNELS.wasm IMAGE CALLS.json OUT: the wasm kernels on a memory holding
// IMAGE's bytes (from address 0), the calls [name, args...] in order, then the image back to OUT.
// tests/test_web_kernels.py makes the image and the calls and checks the results.
import fs from "fs";

const [wasmPath, imagePath, callsPath, outPath] = process.argv.slice(2);
const image = fs.readFileSync(imagePath);
const memory = new WebAssembly.Memory({ initial: Math.ceil(image.length / 65536) + 2 });
const { instance } = await WebAssembly.instantiate(fs.readFileSync(wasmPath), { env: { memory } });
new Uint8Array(memory.buffer).set(image);
for (const [name, ...args] of JSON.parse(fs.readFileSync(callsPath, "utf8"))) instance.exports[name](...args);
fs.writeFileSync(outPath, new Uint8Array(memory.buffer, 0, image.length));
