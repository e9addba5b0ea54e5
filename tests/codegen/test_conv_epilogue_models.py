"""Residual networks written the way torchvision writes them (BasicBlock and Bottleneck with in-place
ReLU, a downsampling shortcut, batch norm, adaptive average pooling, flatten, a linear head), compiled
for inference: every convolution and the batch norm, ReLU and residual add after it become one
`tscript::ConvGroup` (a shortcut's convolution, whose result the block's group reads as its
residual, stays a plain conv2d), the whole model runs as one native call, matches eager (and PyTorch's twin when
installed) to 1e-4, survives a save/load round trip, and the standalone runtime gives the same result."""
import numpy as np
import pytest

import tscript as ts
import tscript_runtime
from tscript_runtime.prims import CONV_GROUP

from tests.codegen.test_window_steps import entry_ran


def network(lib, block: str):
    """A small residual network on `lib` (tscript or torch), its two stages made of `block`s."""
    nn = lib.nn

    def conv_bn(cin, cout, k, stride=1):
        return [nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout)]

    class Basic(nn.Module):
        expansion = 1

        def __init__(self, cin, width, stride):
            super().__init__()
            self.conv1, self.bn1 = conv_bn(cin, width, 3, stride)
            self.conv2, self.bn2 = conv_bn(width, width, 3)
            self.relu = nn.ReLU(inplace=True)
            self.shortcut = nn.Sequential(*conv_bn(cin, width, 1, stride)) if stride != 1 or cin != width else None

        def forward(self, x):
            identity = x if self.shortcut is None else self.shortcut(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            out += identity
            return self.relu(out)

    class Bottleneck(nn.Module):
        expansion = 4

        def __init__(self, cin, width, stride):
            super().__init__()
            self.conv1, self.bn1 = conv_bn(cin, width, 1)
            self.conv2, self.bn2 = conv_bn(width, width, 3, stride)
            self.conv3, self.bn3 = conv_bn(width, width * 4, 1)
            self.relu = nn.ReLU(inplace=True)
            self.shortcut = nn.Sequential(*conv_bn(cin, width * 4, 1, stride)) \
                if stride != 1 or cin != width * 4 else None

        def forward(self, x):
            identity = x if self.shortcut is None else self.shortcut(x)
            out = self.relu(self.bn1(self.conv1(x)))
            out = self.relu(self.bn2(self.conv2(out)))
            out = self.bn3(self.conv3(out))
            out += identity
            return self.relu(out)

    kind = {"basic": Basic, "bottleneck": Bottleneck}[block]

    class Net(nn.Module):
        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(*conv_bn(3, 16, 3), nn.ReLU(inplace=True))
            self.layer1 = nn.Sequential(kind(16, 16, 1), kind(16 * kind.expansion, 16, 1))
            self.layer2 = nn.Sequential(kind(16 * kind.expansion, 32, 2), kind(32 * kind.expansion, 32, 1))
            self.pool = nn.AdaptiveAvgPool2d((1, 1))
            self.fc = nn.Linear(32 * kind.expansion, 10)

        def forward(self, x):
            x = self.layer2(self.layer1(self.stem(x)))
            return self.fc(lib.flatten(self.pool(x), 1))
    return Net()


def built(block: str):
    """The tscript network in eval mode, with non-trivial batch norm statistics."""
    ts.manual_seed(7)
    net = network(ts, block)
    rng = np.random.default_rng(1)
    for name, buffer in net.named_buffers():
        if name.endswith("running_mean"):
            buffer.copy_(ts.from_numpy(rng.standard_normal(buffer.shape).astype(np.float32) * 0.1))
        elif name.endswith("running_var"):
            buffer.copy_(ts.from_numpy(rng.uniform(0.5, 1.5, buffer.shape).astype(np.float32)))
    return net.eval()


@pytest.mark.parametrize("block, convs, shortcuts", [("basic", 10, 1), ("bottleneck", 15, 2)])
def test_residual_network_is_one_native_call(block, convs, shortcuts, tmp_path):
    net = built(block)
    x = ts.from_numpy(np.random.default_rng(2).standard_normal((2, 3, 24, 24)).astype(np.float32))
    with ts.no_grad():
        expected = net(x).numpy()
    compiled = ts.jit.compile(net, (x,))
    groups = [n for n in compiled.graph.nodes if n.kind == CONV_GROUP]
    assert len(groups) == convs - shortcuts, compiled.graph
    assert len([n for n in compiled.graph.nodes if n.kind == "aten::conv2d"]) == shortcuts
    got = compiled(x).numpy()
    assert entry_ran(compiled), compiled.explain()
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())

    path = str(tmp_path / "net.tsm")
    ts.jit.save(compiled, path)
    loaded = tscript_runtime.load(path)
    np.testing.assert_allclose(loaded.run(x.numpy()), got, rtol=1e-6, atol=1e-6)
    assert loaded.executables["forward"].entry is not None
    assert np.array_equal(ts.jit.load(path)(x).numpy(), got)


def test_against_pytorch_twin():
    torch = pytest.importorskip("torch")
    net = built("basic")
    twin = network(torch, "basic").eval()
    twin.load_state_dict({k: torch.from_numpy(v.numpy().copy()) for k, v in net.state_dict().items()})
    x = np.random.default_rng(4).standard_normal((1, 3, 20, 20)).astype(np.float32)
    got = ts.jit.compile(net, (ts.from_numpy(x),))(ts.from_numpy(x)).numpy()
    with torch.no_grad():
        want = twin(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_explain_and_ir_show_the_fused_node():
    net = built("basic")
    x = ts.randn(1, 3, 16, 16)
    compiled = ts.jit.compile(net, (x,))
    text = str(compiled.graph)
    assert "tscript::ConvGroup[subgraph=tscript::ConvGroup_" in text and "with tscript::ConvGroup_" in text
    assert "tscript::ConvGroup" in compiled.explain()


def test_a_compiled_model_with_conv_groups_exports_to_onnx(tmp_path):
    """Export ungroups a ConvGroup like any fused group: the ONNX file computes the same model."""
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    import tscript.onnx
    net = built("basic")
    x = ts.randn(1, 3, 16, 16)
    compiled = ts.jit.compile(net, (x,))
    assert [n for n in compiled.graph.nodes if n.kind == CONV_GROUP]
    path = str(tmp_path / "net.onnx")
    tscript.onnx.export(compiled, (x,), path)
    session = ort.InferenceSession(path)
    got = session.run(None, {session.get_inputs()[0].name: x.numpy()})[0]
    with ts.no_grad():
        want = net(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4 * np.abs(want).max())


def test_convolutions_with_the_same_epilogue_share_its_code():
    """The basic network's nine groups have three epilogues (bias + ReLU, bias + residual + ReLU, and a
    residual read through the shortcut): one function each, not one per convolution; a LeakyReLU with
    another slope is other code and gets its own, and every convolution still computes its own."""
    import re
    net = built("basic")
    x = ts.from_numpy(np.random.default_rng(5).standard_normal((1, 3, 16, 16)).astype(np.float32))
    compiled = ts.jit.compile(net, (x,))
    defined = set(re.findall(r"define internal void @\"(conv_epilogue_\w+)\"", compiled.llvm_ir))
    called = re.findall(r"@\"(conv_epilogue_\w+)\" to i8\*", compiled.llvm_ir)
    assert len(called) == 9 and set(called) == defined and len(defined) <= 3, sorted(defined)

    nn = ts.nn
    ts.manual_seed(3)
    slopes = nn.Sequential(nn.Conv2d(3, 4, 3, padding=1), nn.LeakyReLU(0.1), nn.Conv2d(4, 4, 3, padding=1),
                           nn.LeakyReLU(0.1), nn.Conv2d(4, 4, 3, padding=1), nn.LeakyReLU(0.3)).eval()
    compiled = ts.jit.compile(slopes, (x,))
    called = re.findall(r"@\"(conv_epilogue_\w+)\" to i8\*", compiled.llvm_ir)
    assert len(called) == 3 and called[0] == called[1] != called[2], called
    with ts.no_grad():
        want = slopes(x).numpy()
    np.testing.assert_allclose(compiled(x).numpy(), want, rtol=1e-5, atol=1e-6)
    assert entry_ran(compiled), compiled.explain()
