"""A micropython snippet that runs forward, backward, Adam and Polyak through nn.MLP with one
backend and then with the plain one, every activation, and prints the largest relative
difference ("worst X"). Used by the native and ulab tests."""

_CODE = """
from microrl import backend
from microrl.nn import MLP
from microrl.rng import Rng
out = {}
for name in (%r, "plain"):
    backend.use(name)
    for act in ("relu", "tanh", "sigmoid", "gelu", "identity"):
        net = MLP([5, 7, 3], (act, "tanh"), batch=4).init(Rng(3))
        r = Rng(9)
        for i in range(len(net.input_buf)):
            net.input_buf[i] = r.uniform(-2, 2)
        net.forward(4)
        first = list(net.output_buf)
        dy = net.B.matrix(net.output_buf, 0, 4, 3)
        for i in range(12):
            net.output_buf[i] = net.output_buf[i] - 0.5
        net.backward(dy, 4)
        grads = list(net.grads)
        net.adam_step(1e-2)
        target = MLP([5, 7, 3], (act, "tanh"), batch=1).init(Rng(4))
        target.polyak_from(net, 0.25)
        out[(name, act)] = first + grads + list(net.params) + list(target.params)
worst = 0.0
for act in ("relu", "tanh", "sigmoid", "gelu", "identity"):
    a, b = out[(%r, act)], out[("plain", act)]
    for i in range(len(a)):
        d = abs(a[i] - b[i]) / (1e-4 + abs(b[i]))
        if d > worst:
            worst = d
print("worst", worst)
"""


def compare_code(backend):
    return _CODE % (backend, backend)
