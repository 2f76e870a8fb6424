// cel_eval.mjs - evaluates CEL expressions over JSON inputs with @bufbuild/cel (a conformance-
// tested CEL implementation), the way the API server evaluates webhook matchConditions: the
// object is untyped JSON, so reading an absent field is an error unless guarded by has().
// stdin: {"module": path to @bufbuild/cel, "expressions": {name: expr},
//         "cases": [{"id", "object", "oldObject", "operation", "resource"}]}
//        (resource: request.resource, {group, version, resource}; default core v1 pods)
// stdout: {"parse": {name: null | message}, "results": {id: {name: bool | "error: ..."}}}
// It never decides what is expected; the Python test does.
import fs from "node:fs";
import { pathToFileURL } from "node:url";

const input = JSON.parse(fs.readFileSync(0, "utf8"));
const cel = await import(pathToFileURL(input.module).href);

function toCel(v) {
  if (Array.isArray(v)) return v.map(toCel);
  if (v !== null && typeof v === "object") {
    const m = new Map();
    for (const [k, x] of Object.entries(v)) m.set(k, toCel(x));
    return m;
  }
  if (typeof v === "number" && Number.isInteger(v)) return BigInt(v);
  return v;
}

const out = { parse: {}, results: {} };
for (const [name, expr] of Object.entries(input.expressions)) {
  try {
    cel.parse(expr);
    out.parse[name] = null;
  } catch (e) {
    out.parse[name] = String(e.message || e);
  }
}
for (const c of input.cases) {
  const vars = {
    object: toCel(c.object),
    oldObject: toCel(c.oldObject ?? null),
    request: toCel({ operation: c.operation || "CREATE", namespace: "default",
                     resource: c.resource || { group: "", version: "v1", resource: "pods" } }),
  };
  const r = {};
  for (const [name, expr] of Object.entries(input.expressions)) {
    if (out.parse[name] !== null) { r[name] = "error: does not parse"; continue; }
    let v;
    try { v = cel.run(expr, vars); } catch (e) { v = cel.celError(String(e.message || e)); }
    if (cel.isCelError(v)) r[name] = "error: " + v.message;
    else if (typeof v === "boolean") r[name] = v;
    else r[name] = "error: not a bool: " + String(v);
  }
  out.results[c.id] = r;
}
process.stdout.write(JSON.stringify(out));
