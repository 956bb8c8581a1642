"""ONNX MLPs: the chain of nodes from the graph's input to one of its outputs, each taking the
previous node's value and constants: Gemm, MatMul (+ Add) for dense layers; Relu, Tanh, Sigmoid,
Gelu (exact) for activations; Sub, Add, Mul, Div by constants (observation normalisation before
the first layer, folded into a neighbouring layer between layers, action scaling after the last);
Clip (of the input, of the action, or max(x, 0) as a ReLU); Flatten, Reshape, Identity and Cast to
float as no-ops on a flat observation. Nodes that feed only other outputs (a value head) are left
out. Checked against onnxruntime on the same observations."""
import numpy as np

from .chain import Chain
from .errors import ImportRefused, brief, need
from .imported import Imported, normalised, stats_note
from .limits import check_size, check_values

ACTIVATIONS = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid"}
NO_OPS = ("Identity", "Flatten", "Reshape", "Squeeze", "Unsqueeze", "Dropout")


def _attrs(node):
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _array(t, what, path):
    """The values of an ONNX tensor, checked before they are read: no external data, a size the
    limits allow, as many values as its dims say."""
    from onnx import TensorProto, numpy_helper

    if t.data_location == TensorProto.EXTERNAL or t.external_data:
        raise ImportRefused("%s: its %s keeps its values in another file: microrl import reads one .onnx file (save the model with its weights inside)" % (path, what))
    if any(d < 0 for d in t.dims):
        raise ImportRefused("%s: its %s has negative dims %s" % (path, what, list(t.dims)))
    check_values(int(np.prod([int(d) for d in t.dims], dtype=object)), "%s: its %s" % (path, what))
    try:
        return numpy_helper.to_array(t)
    except Exception as e:
        raise ImportRefused("%s: its %s does not hold the values its dims %s say (%s)" % (path, what, list(t.dims), brief(e))) from None


def _external_data(model, path):
    """Load the initializers' values kept beside the .onnx (torch.onnx.export writes NAME.onnx.data)
    after checking where they are and how big: files in the .onnx's folder only (no absolute
    path, no '..', no link out of it), each tensor within the limits."""
    import os

    from onnx import TensorProto
    from onnx.external_data_helper import load_external_data_for_model

    external = [t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    if not external:
        return
    folder = os.path.realpath(os.path.dirname(os.path.abspath(path)))
    files = set()
    for t in external:
        where = {e.key: e.value for e in t.external_data}
        location = where.get("location", "")
        full = os.path.realpath(os.path.join(folder, location))
        if not location or os.path.isabs(location) or os.path.commonpath([folder, full]) != folder or not os.path.isfile(full):
            raise ImportRefused("%s: its initializer %s keeps its values in %r, not a file in the .onnx's folder" % (path, t.name, location))
        if any(d < 0 for d in t.dims):
            raise ImportRefused("%s: its initializer %s has negative dims %s" % (path, t.name, list(t.dims)))
        check_values(int(np.prod([int(d) for d in t.dims], dtype=object)), "%s: its initializer %s" % (path, t.name))
        files.add(full)
    for f in files:
        check_size(f, "the external data file %s" % os.path.basename(f))
    try:
        load_external_data_for_model(model, folder)
    except Exception as e:
        raise ImportRefused("%s: its initializers' external data cannot be read (%s)" % (path, brief(e))) from None


def _real(c, where):
    """A constant used as a weight, a bias, a scaling or a bound: real floating point."""
    c = np.asarray(c)
    if c.dtype.kind != "f":
        raise ImportRefused("%s: a constant of %s, not of real floating-point values" % (where, c.dtype))
    return np.asarray(c, np.float64)


def load(path, output=None, obs_stats=None, action_box=None, scale_actions=False, clip_actions=False):
    """An Imported for an ONNX file. obs_stats: (mean, std, clip or None) of a normalisation the
    graph expects outside it; action_box (low, high): for scale_actions (the output is in [-1, 1]:
    low + (y + 1) (high - low) / 2) and clip_actions (clip to the Box), applied after the graph."""
    onnx, ort = need("reading an ONNX file", "onnx", "onnxruntime")
    from onnx import numpy_helper

    check_size(path)
    try:
        model = onnx.load(path, load_external_data=False)  # the weights come from this file only, not from paths it names
    except Exception as e:
        raise ImportRefused("%s: not an ONNX model onnx.load reads (%s)" % (path, brief(e))) from None
    g = model.graph
    _external_data(model, path)
    consts = {t.name: _array(t, "initializer %s" % t.name, path) for t in g.initializer}
    for node in g.node:
        if node.op_type == "Constant":
            a = _attrs(node)
            if "value" not in a:
                raise ImportRefused("%s: a Constant node without a tensor value (%s)" % (path, ", ".join(a)))
            consts[node.output[0]] = _array(a["value"], "Constant node %s" % (node.name or node.output[0]), path)
    inputs = [i for i in g.input if i.name not in consts]
    if len(inputs) != 1:
        raise ImportRefused("%s: %d inputs (%s); microrl's policies take one observation vector" % (path, len(inputs), ", ".join(i.name for i in inputs)))
    x_name = inputs[0].name
    dims = [d.dim_value if d.HasField("dim_value") else None for d in inputs[0].type.tensor_type.shape.dim]
    n_in = dims[-1] if dims and dims[-1] else None
    outputs = [o.name for o in g.output]
    if output is None:
        output = outputs[0]
    elif output not in outputs:
        raise ImportRefused("%s: no output %r (its outputs: %s)" % (path, output, ", ".join(repr(o) for o in outputs)))
    # the nodes the chosen output needs, in graph order
    producer = {o: n for n in g.node for o in n.output}
    needed, todo = set(), [output]
    while todo:
        t = todo.pop()
        n = producer.get(t)
        if n is None or id(n) in needed or n.op_type == "Constant":
            continue
        needed.add(id(n))
        todo.extend(n.input)
    chain = Chain(n_in)
    if obs_stats is not None:
        chain.normalise(*obs_stats)
    current = x_name
    before = chain.state()
    for node in (n for n in g.node if id(n) in needed):
        op = node.op_type
        where = "%s: node %s (%s)" % (path, node.name or node.output[0], op)
        data = [i for i in node.input if i and i not in consts]
        if data != [current]:
            raise ImportRefused("%s takes %s, not only the previous node's value: not a chain of layers (an MLP)" % (where, ", ".join(data) or "constants only"))
        const = [consts[i] for i in node.input[1:] if i]
        if op in ("Gemm", "MatMul", "Add", "Sub", "Mul", "Div", "Clip"):
            const = [_real(c, where) for c in const]
        if node.input[0] != current and op in ("Sub", "Div"):
            raise ImportRefused("%s: a constant minus or over the value; microrl's normalisation is (x - mean) / std" % where)
        a = _attrs(node)
        if op == "Gemm":
            if a.get("transA", 0):
                raise ImportRefused("%s: transA=1 (the observation transposed)" % where)
            W = np.asarray(const[0], np.float64) * a.get("alpha", 1.0)
            W = W if a.get("transB", 0) else W.T
            b = np.asarray(const[1], np.float64).reshape(-1) * a.get("beta", 1.0) if len(const) > 1 else None
            if b is not None and b.size == 1 and W.shape[0] > 1:
                b = np.full(W.shape[0], b[0])
            chain.dense(W, b)
        elif op == "MatMul":
            if node.input[0] != current:
                raise ImportRefused("%s: weights times the value; a layer is the value times the weights" % where)
            chain.dense(np.asarray(const[0], np.float64).T)  # a bias follows as an Add, folded into the layer
        elif op in ACTIVATIONS:
            chain.activation(ACTIVATIONS[op])
        elif op == "Gelu":
            if a.get("approximate", b"none") not in (b"none", "none"):
                raise ImportRefused("%s: Gelu(approximate=tanh); microrl's gelu is the exact one (erf)" % where)
            chain.activation("gelu")
        elif op in ("Add", "Sub", "Mul", "Div"):
            c = np.asarray(const[0], np.float64)
            if op == "Add":
                chain.affine(None, c, where)
            elif op == "Sub":
                chain.affine(None, -c, where)
            elif op == "Mul":
                chain.affine(c, None, where)
            else:
                if np.any(c == 0.0):
                    raise ImportRefused("%s: a division by zero" % where)
                chain.affine(1.0 / c, None, where)
        elif op == "Clip":
            if len(node.input) > 1:  # opset 11 and later: min and max are (optional) inputs
                lo = consts[node.input[1]] if node.input[1] else None
                hi = consts[node.input[2]] if len(node.input) > 2 and node.input[2] else None
            else:
                lo, hi = a.get("min"), a.get("max")
            chain.clip(None if lo is None else np.asarray(lo, np.float64), None if hi is None else np.asarray(hi, np.float64), where)
        elif op == "Cast":
            if a.get("to") not in (1, 11):  # FLOAT, DOUBLE
                raise ImportRefused("%s: a cast to a type other than float" % where)
        elif op in NO_OPS:
            pass
        else:
            raise ImportRefused("%s: an operation microrl's policies do not have (they have Gemm or MatMul+Add layers with Relu, Tanh, Sigmoid or "
                                "exact Gelu, constant Add/Sub/Mul/Div around them, and Clip of the input or the action)" % where)
        current = node.output[0]
    if current != output:
        raise ImportRefused("%s: the output %s is not reached through a chain of layers from the input" % (path, output))
    notes = chain.found("the graph's", before)
    if obs_stats is not None:
        notes.append(stats_note(obs_stats))
    if scale_actions:
        low, high = action_box
        chain.affine((high - low) / 2.0, low + (high - low) / 2.0, "the action scaling")
        notes.append("the graph's output in [-1, 1] scaled to the action Box (--scale-actions)")
    if clip_actions:
        chain.clip(*action_box)
        notes.append("actions clipped to the action Box (--clip-actions)")
    try:
        session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    except Exception as e:
        raise ImportRefused("%s: onnxruntime cannot run it (%s)" % (path, brief(e))) from None
    batch = len(dims) == 2

    def actions(obs):
        x = normalised(obs, obs_stats).astype(np.float32)
        if batch and dims[0] is None:
            y = session.run([output], {x_name: x})[0]
        else:  # a fixed batch of one, or a single vector: one run per observation
            y = np.stack([session.run([output], {x_name: (row[None, :] if batch else row)})[0].reshape(-1) for row in x])
        a = np.asarray(y, np.float64).reshape(len(obs), -1)
        if scale_actions:
            a = action_box[0] + 0.5 * (a + 1.0) * (action_box[1] - action_box[0])
        if clip_actions:
            a = np.clip(a, action_box[0], action_box[1])
        return a

    return Imported("onnx", "ONNX graph (opset %s), output %r" % (",".join(str(o.version) for o in model.opset_import), output), chain, actions, notes, obs_stats=obs_stats)
